"""The README and docs/: every relative link resolves (files, and anchors into Markdown
pages), the README stays short, and its CPU try-out commands run as written: the test
extracts the block after ``<!-- tryout -->`` and runs each line, so README and test cannot
drift apart.

The try-out is the one slow test here (about a minute on 2 cores: two worker processes per
command importing torch and triton); the block keeps it to one row.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "README.md"]
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)


def links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))  # a link inside a code block is text
    text = re.sub(r"`[^`\n]*`", "", text)
    return [m.group(1) for m in LINK.finditer(text)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in links(page):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)}: broken links {broken}"


def test_the_readme_is_short_and_in_order() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    heads = [h for h in re.findall(r"^## (.+)$", text, re.M)]
    assert heads == ["Set-up: two commands", "Try it in 3 minutes on a CPU", "What the gate can detect", "Adopt it", "Your own ops",
                     "Reading the verdict", "Reference"]
    assert text.index("![") < text.index("## Try it")  # the example comment comes first


def tryout_commands() -> list[str]:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"<!-- tryout -->\n```bash\n(.*?)\n```", text, re.S)
    assert block, "README.md has no <!-- tryout --> bash block"
    return [ln for ln in block.group(1).splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


@pytest.mark.slow
def test_the_readme_try_out_runs_as_written(tmp_path: Path) -> None:
    commands = tryout_commands()
    assert len(commands) == 3
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
           "NO_COLOR": "1"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    codes = []
    for command in commands:
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)
        codes.append(done.returncode)
        assert done.returncode in (0, 1), (command, done.stdout[-2000:], done.stderr[-2000:])
    # 1. the A/A passes; 2. the planted slowdown fails the gate; 3. the export works
    assert codes[0] == 0 and codes[2] == 0, codes
    (aa,) = tmp_path.glob("aa/pair-smoke_*/verdict/verdict.json")
    doc = json.loads(aa.read_text())
    assert doc["passed"] and doc["state"] in ("pass", "blind")
    assert [r["verdict"] for r in doc["rows"]] == ["UNCHANGED"]
    (planted,) = tmp_path.glob("planted/pair-smoke_*/verdict/verdict.json")
    doc = json.loads(planted.read_text())
    row = doc["rows"][0]
    assert row["effect"] > 0.5  # the README's "+170 % (about)": three launches per launch
    md = planted.with_name("verdict.md").read_text()
    if codes[1] == 1:  # as the README says on a machine not busier than a CI runner
        assert doc["state"] == "fail" and [(r["op"], r["verdict"]) for r in doc["rows"]] == [("add", "REGRESSED")]
        assert md.splitlines()[1].startswith("## ❌ 1 regression, worst add · 4096 · float32 +")
    else:  # as it says of a busy one: noise past the plant, named, never a pass it could have seen
        assert codes[1] == 0 and doc["state"] == "blind" and row["verdict"] in ("UNCONFIRMED", "UNCHANGED"), doc
        assert row["reached_target"] is False and row["detectable_effect"] > row["effect"]
        assert md.splitlines()[1].startswith("## ⚠️ No regression")
    with open(tmp_path / "planted.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["op"], r["case"], r["dtype"]) for r in rows] == [("add", "4096", "float32")]
    assert rows[0]["samples_us"]


def test_the_design_notes_name_every_module_as_its_docstring_does() -> None:
    """docs/design-notes.md's module map is scripts/module_map.py's output: a module added,
    moved or re-described without `python scripts/module_map.py --write` fails here."""
    import importlib.util

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("module_map", root / "scripts" / "module_map.py")
    module_map = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module_map)
    assert module_map.block() in (root / "docs" / "design-notes.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_compare_builds_try_out_runs_as_written(tmp_path: Path) -> None:
    """docs/compare-builds.md's CPU steps (a capture of the smoke suite, the pre-screen with
    --blame) run as one script, the other build an overlay of this Triton that drops a Hopper
    pipeline pass (as tests/prescreen/ makes it): no GPU, no download."""
    from tritongate.overlay import make_overlay

    text = (ROOT / "docs" / "compare-builds.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- compare-builds-cpu -->\n```bash\n(.*?)\n```", text, re.S)
    assert block, "docs/compare-builds.md has no <!-- compare-builds-cpu --> bash block"
    build = make_overlay(sys.executable, [ROOT / "bench" / "patches" / "drop-hopper-pipeline.patch"],
                         tmp_path / "overlay")
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
           "NO_COLOR": "1", "OTHER_PY": str(build.python)}
    env.pop("GITHUB_STEP_SUMMARY", None)
    done = subprocess.run(["bash", "-e", "-c", block.group(1)], cwd=work, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    doc = json.loads((work / "prescreen" / "prescreen.json").read_text())
    assert 0 < len(doc["rows_changed"]) < doc["rows_total"]
    lines = done.stdout.splitlines()
    assert lines[-1] == "prescreen/prescreen.json" and lines[-2].startswith(f"{len(doc['rows_changed'])} of ")
    for op, case, dtype in doc["rows_changed"]:  # each changed row in the table
        assert any(ln.split()[:3] == [op, case, dtype] for ln in lines), (op, case, dtype)
    blame = json.loads((work / "prescreen" / "ir-diff" / "blame.json").read_text())
    assert blame["variants"] and all("tritongpu-pipeline" in v["summary"] for v in blame["variants"])
    shown = re.search(r"<!-- compare-builds-cpu-output -->\n```\n(.*?)\n```", text, re.S)
    assert shown and done.stdout.rstrip("\n") == shown.group(1), done.stdout  # the doc shows what it prints


def test_the_reference_lists_every_command() -> None:
    """docs/reference.md's command block names every command `tritongate --help` lists."""
    import argparse

    from tritongate.cli import build_parser

    text = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    block = text.split("## Commands", 1)[1].split("```", 2)[1]
    listed = set(re.findall(r"^tritongate ([a-z-]+)", block, re.M))
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(sub.choices) - listed == set()
