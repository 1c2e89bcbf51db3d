#!/usr/bin/env python3
"""The package's layers and every module in one line each, from the modules' own docstrings,
for docs/design-notes.md (between its module-map markers).

    python scripts/module_map.py           # print the block
    python scripts/module_map.py --write   # replace it in docs/design-notes.md

The layers are the ones tests/test_layers.py enforces; tests/test_docs.py keeps the page equal
to this output, so a module added, moved or re-described shows up in review."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_layers import LAYERS  # noqa: E402 - after the checkout is on the path

PACKAGE = ROOT / "tritongate"
DOC = ROOT / "docs" / "design-notes.md"
BEGIN, END = "<!-- module-map: begin (scripts/module_map.py --write) -->", "<!-- module-map: end -->"


def first_sentence(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    text = " ".join(doc.split("\n\n")[0].split())
    end = next((i + 1 for i, ch in enumerate(text) if ch == "." and (i + 1 == len(text) or text[i + 1] == " ")),
               len(text))
    return text[:end] or "(no docstring)"


def unit_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return "__main__" if path.name == "__main__.py" else rel.parts[0].removesuffix(".py")


def block() -> str:
    modules = sorted(p for p in PACKAGE.rglob("*.py") if p.parent != PACKAGE or p.name != "__init__.py")
    lines = [BEGIN, ""]
    for i, (name, units) in enumerate(LAYERS):
        below = "nothing of tritongate" if i == 0 else f"layers 1–{i}" if i > 1 else "layer 1"
        lines.append(f"**{i + 1}. {name}** (imports {below} and its own layer)")
        lines.append("")
        for path in modules:
            if unit_of(path) in units:
                lines.append(f"- `{path.relative_to(PACKAGE).as_posix()}`: {first_sentence(path)}")
        lines.append("")
    lines.append(END)
    return "\n".join(lines)


def main() -> int:
    text = block()
    if "--write" not in sys.argv[1:]:
        print(text)
        return 0
    page = DOC.read_text(encoding="utf-8")
    start, stop = page.index(BEGIN), page.index(END) + len(END)
    DOC.write_text(page[:start] + text + page[stop:], encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
