#!/usr/bin/env python3
"""Write the FlagGems op inventory a `provider: flaggems` suite resolves its ops against.

On the target machine (flag_gems imports only where its vendor's GPU is):

    python scripts/collect_flaggems_inventory.py --backend cuda --out ops/inventory_cuda.csv

sets GEMS_VENDOR from the backend (unless set), imports flag_gems, and writes one row per op:
every op tritongate has an input recipe for, and every other public op of flag_gems
(``flag_gems.ops.__all__`` and ``flag_gems.fused.__all__``):

    op,callable,class,status,module
    mm,flag_gems.mm,MatmulBenchmark,ok,flag_gems.runtime.backend._nvidia.hopper.ops.mm

status: ``ok`` (a recipe, and flag_gems has the callable), ``missing`` (a recipe, but this
flag_gems has no such callable), ``no_recipe`` (a public flag_gems op tritongate makes no
inputs for yet). ``module`` is where the function flag_gems binds at top level is defined:
the arch-specific one where flag_gems replaced it (Hopper's mm, mul, sqrt, fill).

Without a GPU, ``--from-source DIR`` reads the op table of an unpacked flag_gems source or
wheel (``DIR/flag_gems/ops/__init__.py`` and ``fused/__init__.py``) without importing it;
arch replacements are then not seen. The first comment line of the file names the command
that regenerates it. Exit 0 written, 2 usage error, 3 flag_gems failed to import.
"""

from __future__ import annotations

import argparse
import ast
import csv
import io
import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tritongate.errors import PreflightError  # noqa: E402
from tritongate.ops.providers import INVENTORY_COLUMNS  # noqa: E402
from tritongate.ops.providers.flaggems_recipes import RECIPES  # noqa: E402

STATUS_NOTE = ("status: ok = tritongate has an input recipe and flag_gems the callable; missing = a recipe "
               "but no such callable in this flag_gems; no_recipe = a public flag_gems op tritongate makes "
               "no inputs for yet (not measurable). class = the recipe's family and the shape file's "
               "fallback key. module = where the function flag_gems binds at top level is defined.")


def command_line(backend: str, out: str, source: str | None) -> str:
    text = f"python scripts/collect_flaggems_inventory.py --backend {backend} --out {out}"
    return text + (f" --from-source {source}" if source else "")


def rows(public: dict[str, str], present: dict[str, str]) -> list[dict[str, str]]:
    """``public``: every public op name -> its module; ``present``: the names the package
    binds to a callable at top level -> the module of that callable."""
    out: list[dict[str, str]] = []
    for op, rec in RECIPES.items():
        ok = op in present
        out.append({"op": op, "callable": f"flag_gems.{op}", "class": rec.family.name,
                    "status": "ok" if ok else "missing", "module": present.get(op, "")})
    for op in sorted(set(public) - set(RECIPES)):
        if op.startswith("_") or not op.isidentifier():
            continue  # private helpers (flag_gems exports a few) are not ops a suite names
        out.append({"op": op, "callable": f"flag_gems.{op}", "class": "", "status": "no_recipe",
                    "module": present.get(op, public[op])})
    return sorted(out, key=lambda r: (r["status"] != "ok", r["op"]))


def from_import(backend: str) -> tuple[str, dict[str, str], dict[str, str]]:
    from tritongate.ops.providers import flaggems

    module = flaggems.import_flag_gems(backend)
    public: dict[str, str] = {}
    for sub in ("ops", "fused"):
        mod = getattr(module, sub, None)
        for name in getattr(mod, "__all__", ()):
            fn = getattr(mod, name, None)
            if callable(fn):  # __all__ also exports constants (SUPPORTED_FP8_DTYPE)
                public[name] = getattr(fn, "__module__", "") or f"flag_gems.{sub}"
    present = {name: getattr(getattr(module, name), "__module__", "") or ""
               for name in set(public) | set(RECIPES) if callable(getattr(module, name, None))}
    import torch
    import triton

    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else platform.node()
    where = (f"collected by importing flag_gems {getattr(module, '__version__', '?')} on {device} "
             f"(vendor {getattr(module, 'vendor_name', '?')}, torch {torch.__version__}, triton {triton.__version__})")
    return where, public, present


def _ast_all_and_imports(path: Path) -> tuple[list[str], dict[str, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[str] = []
    imported: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                imported[alias.asname or alias.name] = node.module
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            names = [elt.value for elt in getattr(node.value, "elts", []) if isinstance(elt, ast.Constant)]
    return names, imported


def from_source(source: Path) -> tuple[str, dict[str, str], dict[str, str]]:
    package = source / "flag_gems"
    init = package / "__init__.py"
    if not init.is_file():
        raise SystemExit(f"error: {init} does not exist; pass the folder that holds flag_gems/")
    public: dict[str, str] = {}
    for sub in ("ops", "fused"):
        names, imported = _ast_all_and_imports(package / sub / "__init__.py")
        for name in names:
            if not name.isupper():  # constants (SUPPORTED_FP8_DTYPE) are exported too; no import to tell
                public[name] = imported.get(name, f"flag_gems.{sub}")
    version = "?"
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets):
            version = getattr(node.value, "value", "?")
    # the top level star-imports ops and fused: every public name is bound there too
    where = (f"collected from the flag_gems {version} wheel's op table (flag_gems/ops/__init__.py and "
             "flag_gems/fused/__init__.py __all__, read without importing: arch-specific replacements "
             "such as Hopper's mm are not seen)")
    return where, public, dict(public)


def render(where: str, command: str, table: list[dict[str, str]]) -> str:
    buf = io.StringIO()
    buf.write(f"# {where}; regenerate on the GPU with: {command}\n")
    buf.write(f"# {STATUS_NOTE}\n")
    writer = csv.DictWriter(buf, fieldnames=list(INVENTORY_COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows(table)
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="cuda", choices=["cuda", "rocm", "musa", "ascend"],
                        help="the backend the inventory is for (sets GEMS_VENDOR unless set)")
    parser.add_argument("--out", help="where to write (default: ops/inventory_<backend>.csv)")
    parser.add_argument("--from-source", metavar="DIR", type=Path,
                        help="read an unpacked flag_gems source/wheel instead of importing flag_gems")
    args = parser.parse_args(argv)
    out = args.out or f"ops/inventory_{args.backend}.csv"
    command = command_line(args.backend, out, None)
    try:
        where, public, present = from_source(args.from_source) if args.from_source else from_import(args.backend)
    except PreflightError as exc:
        print(f"{exc.marker}\n{exc}", file=sys.stderr)
        return 3
    table = rows(public, present)
    text = render(where, command, table)
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    counts = {s: sum(1 for r in table if r["status"] == s) for s in ("ok", "missing", "no_recipe")}
    print(f"{path}: {len(table)} ops ({', '.join(f'{v} {k}' for k, v in counts.items())})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
