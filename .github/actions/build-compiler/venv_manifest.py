"""The content manifest of a trusted build venv: every file's sha256 and every link's target.

    python venv_manifest.py write VENV    after a trusted build (the nightly), before the
                                          completion marker
    python venv_manifest.py verify VENV   before a job that runs PR code reuses it: exit 0
                                          when the venv is exactly what was written, exit 1
                                          naming the first file that differs (or missing
                                          manifest), exit 2 on bad usage

Standard library only; run with the runner's own interpreter, never the venv's (a tampered
venv must not check itself). The manifest and the completion marker are not listed.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

MANIFEST = ".tritongate-manifest.json"
SKIP = {MANIFEST, ".tritongate-complete"}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:  # hashlib.file_digest is 3.11+; the base interpreter may be 3.9
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def scan(venv: Path) -> dict[str, dict[str, str]]:
    files: dict[str, str] = {}
    links: dict[str, str] = {}
    for root, dirs, names in os.walk(venv):  # links to folders are listed, never followed
        rel_root = Path(root).relative_to(venv)
        for name in [*names, *[d for d in dirs if os.path.islink(os.path.join(root, d))]]:
            path = Path(root) / name
            rel = (rel_root / name).as_posix()
            if rel in SKIP:
                continue
            if path.is_symlink():
                links[rel] = os.readlink(path)
            else:
                files[rel] = _sha256(path)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
    return {"files": dict(sorted(files.items())), "links": dict(sorted(links.items()))}


def write(venv: Path) -> int:
    data = {"schema_version": 1, **scan(venv)}
    tmp = venv / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, venv / MANIFEST)
    print(f"manifest: {len(data['files'])} files, {len(data['links'])} links in {venv / MANIFEST}")
    return 0


def first_difference(want: dict[str, dict[str, str]], have: dict[str, dict[str, str]]) -> str | None:
    for kind in ("files", "links"):
        w, h = want.get(kind, {}), have[kind]
        for rel in sorted(set(w) | set(h)):
            if rel not in h:
                return f"{rel} is missing"
            if rel not in w:
                return f"{rel} was added"
            if w[rel] != h[rel]:
                return f"{rel} changed"
    return None


def verify(venv: Path) -> int:
    try:
        want = json.loads((venv / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        print(f"{venv}: no readable {MANIFEST} (not written by a trusted build)")
        return 1
    if not isinstance(want, dict) or want.get("schema_version") != 1:
        print(f"{venv}: {MANIFEST} is not a schema 1 manifest")
        return 1
    diff = first_difference(want, scan(venv))
    if diff:
        print(f"{venv}: {diff} since the trusted build wrote its manifest")
        return 1
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("write", "verify") or not Path(argv[1]).is_dir():
        print("usage: venv_manifest.py write|verify VENV", file=sys.stderr)
        return 2
    venv = Path(argv[1])
    return write(venv) if argv[0] == "write" else verify(venv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
