"""``tritongate overlay``: a compiler build from a patch (tritongate.overlay), for `pair`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tritongate.argtypes import nonempty_text
from tritongate.cli.common import exit_codes


def add_overlay_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``overlay``."""
    p = sub.add_parser(
        "overlay", help="make a compiler build from a patch of Triton's Python sources (seconds, no compile)",
        description="Make a venv at OUT whose Triton is the --base-python interpreter's installed build with "
                    "the patches applied to its Python sources (python/triton/**, third_party/*/backend/**, "
                    "or installed paths triton/**); the compiled libraries are linked, not rebuilt. A patch "
                    "that touches compiled code, or does not apply, is refused by name. The build records "
                    "each patch's sha256 (the run identity carries it). Prints the new interpreter as the "
                    "last line of stdout: pass it to `tritongate pair RECORD --cand-python`.",
        epilog=exit_codes(0, 2, 4, 130), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base-python", type=nonempty_text, default=sys.executable, metavar="PY",
                   help="interpreter of the installed build to patch (default: this one)")
    p.add_argument("--patch", type=nonempty_text, action="append", required=True, metavar="FILE",
                   help="a unified diff (git diff / git format-patch); repeat to apply several in order")
    p.add_argument("--out", type=nonempty_text, required=True, metavar="DIR",
                   help="the new build's folder (must not exist)")
    p.set_defaults(func=cmd_overlay)


def cmd_overlay(args: argparse.Namespace) -> int:
    """Make the overlay; errors (OverlayError, UsageError) reach main() as exit 2."""
    from tritongate.overlay import make_overlay

    build = make_overlay(args.base_python, [Path(p) for p in args.patch], Path(args.out))
    hashes = ", ".join(f"{Path(p['path']).name} sha256 {p['sha256'][:12]}" for p in build.patches)
    print(f"overlay build: {len(build.files)} file(s) patched ({', '.join(build.files)}); {hashes}",
          file=sys.stderr)
    print(build.python)
    return 0
