#!/usr/bin/env python3
"""CI entry point: check a downloaded baseline entry before it is pushed to the data branch.

    python ci/verify_entry.py ENTRY_DIR --entry RUNNER_CLASS/SUITE/GPU/NAME

The entry was made on a GPU runner, and travels as an artifact to the job that can push: it
is checked there again, as data. It must hold a valid manifest.json whose record_path is
--entry, exactly the files the manifest lists (no more, no fewer), each a regular file (no
symlinks, devices or FIFOs) with the sha256 the manifest names, and at most MAX_BYTES in
all. Exit 0 verified, 2 refused (one `error:` line).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import stat
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

MAX_BYTES = 2 * 2**30  # a record of the largest suite is well under this; more is not ours
MAX_FILES = 20_000


class Refused(Exception):
    pass


def _walk(root: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames:
            if (Path(dirpath) / name).is_symlink():
                raise Refused(f"{Path(dirpath, name).relative_to(root)} is a symlink")
        for name in filenames:
            path = Path(dirpath) / name
            mode = os.lstat(path).st_mode
            if not stat.S_ISREG(mode):
                raise Refused(f"{path.relative_to(root)} is not a regular file")
            found[path.relative_to(root).as_posix()] = path
            if len(found) > MAX_FILES:
                raise Refused(f"more than {MAX_FILES} files")
    return found


def verify(root: Path, entry: str) -> int:
    from tritongate.baselines.manifest import MANIFEST, BaselineError, read_manifest

    if root.is_symlink() or not root.is_dir():
        raise Refused(f"{root} is not a folder")
    files = _walk(root)
    if MANIFEST not in files:
        raise Refused(f"no {MANIFEST}")
    try:
        manifest = read_manifest(files.pop(MANIFEST))
    except BaselineError as exc:
        raise Refused(str(exc)) from None
    if manifest.record_path != entry:
        raise Refused(f"the manifest's record_path is {manifest.record_path!r}, not {entry!r}")
    if set(manifest.files) != set(files):
        extra, missing = sorted(set(files) - set(manifest.files)), sorted(set(manifest.files) - set(files))
        raise Refused(f"files not in the manifest {extra[:5]}, missing {missing[:5]}")
    total = 0
    for rel, path in sorted(files.items()):
        total += path.stat().st_size
        if total > MAX_BYTES:
            raise Refused(f"more than {MAX_BYTES} bytes")
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != manifest.files[rel]:
            raise Refused(f"{rel}: sha256 {digest[:12]}… is not the manifest's {manifest.files[rel][:12]}…")
    return len(files)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="verify_entry.py")
    p.add_argument("folder", type=Path)
    p.add_argument("--entry", required=True)
    args = p.parse_args(argv)
    try:
        n = verify(args.folder, args.entry)
    except (Refused, OSError) as exc:
        print(f"error: verify_entry.py: refused {args.folder}: {exc}", file=sys.stderr)
        return 2
    print(f"verified {args.entry}: {n} files and the manifest")
    return 0


if __name__ == "__main__":
    sys.exit(main())
