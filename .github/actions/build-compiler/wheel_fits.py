"""Whether a compiler wheel built on another runner can be installed and loaded by this
interpreter: its tags (Python version, ABI, platform) among the interpreter's, and the C library
it was built against (WHEEL.build-host beside it, written by build.sh) no newer than this one's.

    PYTHON wheel_fits.py WHEEL      exit 0: it fits; exit 1: one line on stdout says why not

Run by the runner's own interpreter (the one the build venv is made from), never by a build's:
the wheel is untrusted data here (a pre-screen job that ran PR code made it), so only its file
name and the one short line beside it are read. Standard library, and the `packaging` that pip
vendors when the interpreter has no `packaging` of its own.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

LIBC = re.compile(r"glibc (\d+)\.(\d+)")


def _tag_tools():
    try:
        from packaging.tags import sys_tags
        from packaging.utils import parse_wheel_filename
    except ImportError:
        from pip._vendor.packaging.tags import sys_tags
        from pip._vendor.packaging.utils import parse_wheel_filename
    return sys_tags, parse_wheel_filename


def why_not(wheel: Path) -> str | None:
    """None when the wheel fits this interpreter, else the reason."""
    try:
        sys_tags, parse_wheel_filename = _tag_tools()
    except ImportError:
        return "this interpreter has no packaging, nor a pip that vendors it, to read the wheel's tags with"
    try:
        tags = parse_wheel_filename(wheel.name)[3]
    except ValueError as exc:  # packaging's InvalidWheelFilename and InvalidVersion are ValueErrors
        return f"{wheel.name[:120]!r} is not a wheel's file name ({type(exc).__name__})"
    if not set(tags) & set(sys_tags()):
        return (f"{wheel.name} is for {', '.join(sorted(str(t) for t in tags)[:3])}, which "
                f"Python {sys.version_info[0]}.{sys.version_info[1]} on this runner cannot install")
    note = wheel.with_name(wheel.name + ".build-host")
    try:
        built = LIBC.fullmatch(note.read_text(encoding="ascii", errors="replace")[:64].strip()) \
            if note.is_file() and not note.is_symlink() else None
    except OSError:
        built = None
    if built is None:
        return "no readable .build-host file beside the wheel: the C library it was built against is unknown"
    here = LIBC.fullmatch(os.confstr("CS_GNU_LIBC_VERSION") or "") if hasattr(os, "confstr") else None
    if here is None:
        return "this runner's C library is not glibc"
    if tuple(map(int, built.groups())) > tuple(map(int, here.groups())):
        return (f"it was built against glibc {'.'.join(built.groups())}, newer than this runner's "
                f"{'.'.join(here.groups())}")
    return None


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: wheel_fits.py WHEEL", file=sys.stderr)
        return 2
    why = why_not(Path(argv[0]))
    if why:
        print(why)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
