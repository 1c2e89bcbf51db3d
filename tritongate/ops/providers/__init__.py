"""Op providers: packages whose ops a suite takes by name (``provider: flaggems``).

Without importing the provider's package (so on any machine, for the suite's digest too) this
reads the inventory and the dismiss list (formats: ``ops/README.md``) and decides which ops a
suite measures, with their dtypes and shapes; the provider's module (``PROVIDERS[name].module``)
makes ``OpSpec``s of them. Every problem is a ``PreflightError`` of one line naming the file.
"""

from __future__ import annotations

import csv
import difflib
import functools
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from tritongate.errors import PreflightError
from tritongate.ops.providers import flaggems_recipes
from tritongate.validation import validate
from tritongate.validation.inputfiles import DismissEntryDoc, InventoryRowDoc

Shape = tuple[int, ...]
DEFAULT_KEY = "Benchmark"  # the shape file's default entry (FlagGems' base benchmark class)
INVENTORY_COLUMNS = ("op", "callable", "class", "status", "module")
REQUIRED_COLUMNS = INVENTORY_COLUMNS[:4]


@dataclass(frozen=True)
class Provider:
    name: str
    package: str  # the Python package the ops come from
    module: str  # tritongate's module that makes the OpSpecs (a suite `modules:` entry)
    prefix: str  # row names are prefix + op
    recipe: Callable[[str], Any]  # op -> its recipe, or None
    collect: str  # the command that regenerates an inventory (with {backend})


PROVIDERS: dict[str, Provider] = {
    "flaggems": Provider(
        name="flaggems", package="flag_gems", module="tritongate.ops.providers.flaggems",
        prefix="flag_gems.", recipe=flaggems_recipes.recipe,
        collect="python scripts/collect_flaggems_inventory.py --backend {backend} "
                "--out ops/inventory_{backend}.csv"),
}


def provider(name: str) -> Provider:
    try:
        return PROVIDERS[name]
    except KeyError:
        raise PreflightError("suite_file", f"unknown provider {name!r}; known: {', '.join(PROVIDERS)}") from None


# -- the inventory ------------------------------------------------------------------------------

@dataclass(frozen=True)
class InventoryEntry:
    op: str
    callable: str
    family: str
    status: str
    module: str
    line: int


@dataclass(frozen=True)
class Inventory:
    path: Path
    entries: dict[str, InventoryEntry]
    comments: tuple[str, ...]  # the header's comment lines, without '#'
    raw: bytes

    def ok(self) -> list[str]:
        return [op for op, e in self.entries.items() if e.status == "ok"]


_inventory_error = functools.partial(PreflightError, "inventory")


def read_inventory(path: Path) -> Inventory:
    if not path.is_file():
        raise _inventory_error(f"{path} does not exist; name the provider's op table under 'inventory:' "
                               "(relative to the suite), e.g. ../inventory_cuda.csv")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _inventory_error(f"{path} is not UTF-8 text (byte {exc.start})") from None
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip() and not line.startswith("#")), len(lines))
    comments = [line[1:].strip() for line in lines[:first] if line.startswith("#")]
    if first >= len(lines):
        raise _inventory_error(f"{path} has no header line; expected {','.join(INVENTORY_COLUMNS)}")
    reader = csv.reader(io.StringIO("\n".join(lines[first:])))
    header = next(reader)
    if not set(REQUIRED_COLUMNS) <= set(header) <= set(INVENTORY_COLUMNS) or len(set(header)) != len(header):
        raise _inventory_error(f"{path}:{first + 1}: the header must be {','.join(INVENTORY_COLUMNS)} "
                               f"(module optional), got {','.join(header)[:120]!r}")
    entries: dict[str, InventoryEntry] = {}
    for number, row in enumerate(reader, start=first + 2):
        if not row or (len(row) == 1 and not row[0].strip()) or row[0].startswith("#"):
            continue
        if len(row) != len(header):
            raise _inventory_error(f"{path}:{number}: expected {len(header)} fields ({','.join(header)}), "
                                   f"got {len(row)}")
        doc = validate(InventoryRowDoc, dict(zip(header, row)), source=f"{path}:{number}", error=_inventory_error)
        if doc.op in entries:
            raise _inventory_error(f"{path}:{number}: op {doc.op!r} is listed twice "
                                   f"(first on line {entries[doc.op].line})")
        entries[doc.op] = InventoryEntry(doc.op, doc.callable, doc.family, doc.status, doc.module, number)
    if not entries:
        raise _inventory_error(f"{path} lists no ops")
    return Inventory(path=path, entries=entries, comments=tuple(comments), raw=raw)


# -- the dismiss list ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Dismissal:
    op: str
    date: str
    reason: str
    line: int


_dismiss_error = functools.partial(PreflightError, "dismiss_file")


def read_dismiss(path: Path) -> tuple[dict[str, Dismissal], bytes]:
    if not path.is_file():
        raise _dismiss_error(f"{path} does not exist; name the dismiss list under 'dismiss:' "
                             "(relative to the suite), or leave the key out")
    raw = path.read_bytes()
    entries: dict[str, Dismissal] = {}
    for number, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        parts = [p.strip() for p in text.split("|", 2)]
        if len(parts) != 3:
            raise _dismiss_error(f"{path}:{number}: expected 'op | YYYY-MM-DD | reason', got {text[:80]!r}")
        doc = validate(DismissEntryDoc, dict(zip(("op", "date", "reason"), parts)), source=f"{path}:{number}",
                       error=_dismiss_error)
        if doc.op in entries:
            raise _dismiss_error(f"{path}:{number}: op {doc.op!r} is dismissed twice "
                                 f"(first on line {entries[doc.op].line})")
        entries[doc.op] = Dismissal(doc.op, doc.date, doc.reason, number)
    return entries, raw


# -- shapes ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ShapeChoice:
    shapes: tuple[Shape, ...]
    source: str  # "suite", "<file>:<key>", or "default:<family>"


def shape_chain(op: str, names: Iterable[str], family: Any, shapes_by_key: Mapping[str, tuple[Shape, ...]],
                *, inline: tuple[Shape, ...] = (), file_label: str = "") -> ShapeChoice:
    """An op's shapes: inline, then the file's key for each of ``names`` (the op's own
    spellings), then the family's class name (shapes under these two as written: a wrong rank
    is the caller's error to report, naming the key), then the file's ``Benchmark`` entry
    (shapes of a rank the op takes), then the family's default shapes."""
    if inline:
        return ShapeChoice(inline, "suite")
    for key in (*names, family.name):
        if shapes_by_key.get(key):
            return ShapeChoice(shapes_by_key[key], f"{file_label}:{key}")
    fitting = tuple(s for s in shapes_by_key.get(DEFAULT_KEY, ()) if len(s) in family.ranks)
    if fitting:
        return ShapeChoice(fitting, f"{file_label}:{DEFAULT_KEY}")
    return ShapeChoice(tuple(family.default_shapes), f"default:{family.name}")


# -- resolving a provider suite ------------------------------------------------------------------

@dataclass(frozen=True)
class ResolvedOp:
    op: str  # the provider's name
    row_name: str  # the name rows and the registry use
    dtypes: tuple[str, ...]
    shapes: tuple[Shape, ...]
    shape_source: str


@dataclass
class Resolution:
    ops: list[ResolvedOp] = field(default_factory=list)
    dismissed: list[str] = field(default_factory=list)  # inventory ops `ops: inventory` left out


def _near(op: str, inventory: Inventory, before: str, after: str = "") -> str:
    near = difflib.get_close_matches(op, list(inventory.entries), n=4, cutoff=0.6)
    return f"{before}{', '.join(near)}{after}" if near else ""


def resolve_ops(prov: Provider, *, suite_path: Path, ops: Mapping[str, Any], all_inventory: bool,
                suite_dtypes: tuple[str, ...] | None, inventory: Inventory,
                dismissed: Mapping[str, Dismissal], shapes_by_key: Mapping[str, tuple[Shape, ...]],
                shape_label: str) -> Resolution:
    """The suite's ops checked against the inventory and the provider's recipes, each with
    its dtypes and shapes. ``ops`` maps op names to their suite entries (``dtypes``/``shapes``
    or None)."""
    for op, dismissal in dismissed.items():
        if op not in inventory.entries:
            raise _dismiss_error(f"dismiss list line {dismissal.line}: op {op!r} is not in the inventory "
                                 f"{inventory.path}{_near(op, inventory, ' (close matches: ', ')')}; fix the name "
                                 "or drop the line")
    known = sorted({d for rec in flaggems_recipes.RECIPES.values() for d in rec.all_dtypes})
    unknown = [d for d in suite_dtypes or () if d not in known]
    if unknown:  # else a typo would silently run every op in its own dtype
        raise PreflightError("dtype", f"{suite_path}: dtypes {unknown} are not dtypes any {prov.package} op here "
                             f"runs (known: {', '.join(known)})")
    out = Resolution(dismissed=[op for op in inventory.ok() if op in dismissed] if all_inventory else [])
    entries = {op: None for op in inventory.ok() if op not in dismissed} if all_inventory else dict(ops)
    for op, entry in entries.items():
        inv = inventory.entries.get(op)
        if inv is None:
            raise PreflightError("unknown_op", f"{suite_path}: op {op!r} is not in the inventory {inventory.path} "
                                 f"({len(inventory.entries)} ops){_near(op, inventory, '; close matches: ')}")
        rec = prov.recipe(op)
        regen = prov.collect.format(backend=inventory.path.stem.removeprefix("inventory_") or "cuda")
        if inv.status == "no_recipe":
            raise PreflightError("unknown_op", f"{suite_path}: op {op!r} has no input recipe in tritongate "
                                 f"({inventory.path}:{inv.line} says no_recipe), so it cannot be measured; "
                                 "drop it from the suite")
        if inv.status == "missing":
            raise PreflightError("unknown_op", f"{suite_path}: op {op!r} is missing from the {prov.package} the "
                                 f"inventory was collected from ({inventory.path}:{inv.line}); drop it, or "
                                 f"regenerate the inventory: {regen}")
        if rec is None:
            raise _inventory_error(f"{inventory.path}:{inv.line}: op {op!r} is marked ok but tritongate has no "
                                   f"input recipe for it; regenerate the inventory: {regen}")
        if inv.family != rec.family.name:
            raise _inventory_error(f"{inventory.path}:{inv.line}: op {op!r} has class {inv.family!r}, but "
                                   f"tritongate's recipe is of class {rec.family.name!r}; regenerate the "
                                   f"inventory: {regen}")
        row = prov.prefix + op
        inline = tuple(tuple(s) for s in entry.shapes) if entry is not None and entry.shapes else ()
        choice = shape_chain(op, (op, row), rec.family, shapes_by_key, inline=inline, file_label=shape_label)
        for shape in choice.shapes:
            bad = None if len(shape) in rec.family.ranks else \
                f"takes {rec.family.shape_doc} ({' or '.join(map(str, rec.family.ranks))} dims), got {list(shape)}"
            bad = bad or flaggems_recipes.shape_problem(rec, shape)
            if bad:
                where = suite_path if choice.source == "suite" else choice.source
                raise PreflightError("shape_arity", f"{where}: op {op!r} (class {rec.family.name}) {bad}")
        own = tuple(entry.dtypes) if entry is not None and entry.dtypes else None
        out.ops.append(ResolvedOp(op, row, own or _dtypes(rec, suite_dtypes), choice.shapes, choice.source))
    return out


def _dtypes(rec: Any, suite_dtypes: tuple[str, ...] | None) -> tuple[str, ...]:
    """The suite's dtypes the op runs; an op that runs none of them (bitwise ops on int) runs
    its own first dtype, so `ops: inventory` with float dtypes still covers it."""
    supported = rec.all_dtypes
    if suite_dtypes:
        common = tuple(d for d in suite_dtypes if d in supported)
        return common or supported[:1]
    return supported[:1] if "float32" not in supported else ("float32",)
