"""Render verdicts' PR comments to PNG, as a reviewer sees them: the comment from
``render_verdict`` (the one renderer), turned into HTML by a CommonMark renderer
(markdown-it-py, tables on) with GitHub-like styling, photographed by headless Chromium.

    python scripts/render_comment_png.py VERDICT [VERDICT ...] --out-dir docs/img [--name NAME]

VERDICT is a verdict folder or a verdict.json (any schema the project's loader reads, so the
H200 verdicts in bench/results/ work too). Each PNG is named after its file
(``pass.verdict.json`` -> ``pass.png``) unless ``--name`` is given (one verdict only).
Needs Debian's chromium (``apt-get install -y chromium``) or ``--chromium PATH``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from markdown_it import MarkdownIt

from tritongate.gate.verdict_file import load_verdict
from tritongate.report.verdict_markdown import render_verdict

WIDTH = 920  # about GitHub's comment column
CSS = """
body { font-family: -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; font-size: 14px;
       line-height: 1.5; color: #1f2328; background: #fff; margin: 0; padding: 16px; }
.comment { border: 1px solid #d1d9e0; border-radius: 6px; padding: 16px 20px; max-width: 880px; }
h2 { font-size: 1.4em; border-bottom: 1px solid #d1d9e0; padding-bottom: .3em; margin-top: 0; }
table { border-collapse: collapse; margin: 8px 0 16px; display: block; overflow: auto; }
th, td { border: 1px solid #d1d9e0; padding: 4px 10px; }
th { background: #f6f8fa; font-weight: 600; }
tr:nth-child(2n) td { background: #f6f8fa; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 85%; background: #eff1f3;
       padding: .1em .3em; border-radius: 4px; }
pre { background: #f6f8fa; padding: 10px; border-radius: 6px; overflow: auto; }
pre code { background: none; padding: 0; }
sub { color: #59636e; }
details { margin: 6px 0; }
summary { cursor: pointer; color: #0969da; }
"""


def comment_html(markdown: str) -> str:
    body = MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)
    return (f"<!doctype html><html><head><meta charset='utf-8'><style>{CSS}</style></head>"
            f"<body><div class='comment'>{body}</div></body></html>")


def chromium_binary(given: str | None) -> str:
    for name in ([given] if given else ["chromium", "chromium-browser", "google-chrome"]):
        path = shutil.which(name) if name else None
        if path:
            return path
    raise SystemExit("no chromium found: apt-get install -y chromium, or pass --chromium PATH")


def screenshot(page: Path, png: Path, chromium: str, height: int = 8000) -> None:
    """Chromium's headless screenshot of a tall window, cropped to the comment."""
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                        "--no-first-run", "--disable-background-networking", "--disable-component-update",
                        "--disable-sync", "--hide-scrollbars", f"--user-data-dir={profile}",
                        f"--window-size={WIDTH},{height}", f"--screenshot={png}", page.as_uri()],
                       check=True, capture_output=True, timeout=120)
    _crop(png)


def _crop(png: Path) -> None:
    from PIL import Image, ImageChops

    with Image.open(png) as img:
        rgb = img.convert("RGB")
    background = Image.new("RGB", rgb.size, (255, 255, 255))
    box = ImageChops.difference(rgb, background).getbbox()
    if box:
        left, top, right, bottom = box
        rgb = rgb.crop((max(0, left - 16), max(0, top - 16), min(rgb.width, right + 16),
                        min(rgb.height, bottom + 16)))
    rgb.save(png, optimize=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("verdicts", nargs="+", metavar="VERDICT", help="verdict folders or verdict.json files")
    parser.add_argument("--out-dir", required=True, metavar="DIR", help="where the PNGs go")
    parser.add_argument("--name", metavar="NAME", help="the PNG's name (one verdict only)")
    parser.add_argument("--chromium", metavar="PATH", help="the browser (default: chromium on PATH)")
    args = parser.parse_args(argv)
    if args.name and len(args.verdicts) != 1:
        parser.error("--name needs exactly one VERDICT")
    chromium = chromium_binary(args.chromium)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for given in args.verdicts:
        verdict = load_verdict(given)
        stem = args.name or verdict.path.name.removesuffix(".json").removesuffix(".verdict")
        if stem == "verdict":  # a verdict folder: name it after the folder
            stem = verdict.path.parent.name
        with tempfile.TemporaryDirectory() as tmp:
            page = Path(tmp) / "comment.html"
            page.write_text(comment_html(render_verdict(verdict.doc)), encoding="utf-8")
            png = out / f"{stem}.png"
            screenshot(page, png, chromium)
        print(png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
