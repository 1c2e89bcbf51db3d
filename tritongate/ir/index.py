"""One compiled kernel variant as the IR index records it, and ``index.tsv`` itself."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from tritongate import safefs

INDEX = "index.tsv"
OPTION_KEYS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion")


@dataclass(frozen=True)
class CompiledVariant:
    """One compiled variant of one kernel for one case (shape): arguments by name to their
    Triton types (``*fp16``), constexpr values and specialization attributes
    (``[["tt.divisibility", 16]]``); the compile options that shape the code. ``compile_hash``
    is Triton's (build-specific) cache key; ``binary_hash`` hashes the cubin bytes."""

    case: str
    kernel: str  # module.qualname
    signature: Mapping[str, str]
    constexprs: Mapping[str, Any]
    specialization: Mapping[str, Any]
    options: Mapping[str, Any]
    compile_hash: str
    source_hash: str = ""
    binary_hash: str = ""
    target: str = ""  # e.g. cuda:90
    launches: int = 0  # in the row's recording pass; 0 and sweep_loser: compiled, never chosen
    sweep_loser: bool = False
    rows: tuple[str, ...] = ()  # "op/dtype" of the rows that compiled or launched it
    name: str = ""  # the file stem (launched variants), given by ``naming``
    file: str = ""  # relative to ttgir/

    def __post_init__(self) -> None:
        if not self.case or not self.kernel or not self.compile_hash:
            raise ValueError("a compiled variant needs a case, a kernel and a compile hash")

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.case, self.kernel, self.compile_hash)

    @property
    def element_type(self) -> str:
        """The first pointer argument's element type (``fp16``), the variant's dtype."""
        return next((t.lstrip("*k") for t in self.signature.values() if isinstance(t, str) and t.startswith("*")), "")


def level_file(file: str, level: str) -> str:
    """The file holding a variant's IR at ``level`` (``llir``, ``ptx``, ``sass``) beside its
    ``.ttgir`` (``file``, relative to ttgir/): ``k/BS1024_w4s3.ttgir`` -> ``k/BS1024_w4s3.llir``."""
    stem, dot, suffix = file.rpartition(".")
    return f"{stem if dot and '/' not in suffix else file}.{level}"


_JSON_FIELDS = ("signature", "constexprs", "specialization", "options")
COLUMNS = tuple(f.name for f in fields(CompiledVariant))


def tsv_text(columns: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A header line and the rows as TSV text, as every IR table (index.tsv, an ir-diff's
    index.tsv and levels.tsv) is written."""
    buf = io.StringIO()
    w = csv.writer(buf, delimiter="\t", lineterminator="\n")
    w.writerow(columns)
    w.writerows(rows)
    return buf.getvalue()


def index_text(variants: list[CompiledVariant]) -> str:
    """The index as TSV text (one line per variant, JSON in the mapping columns)."""
    ordered = sorted(variants, key=lambda v: (v.case, v.kernel, v.sweep_loser, v.name, v.compile_hash))
    return tsv_text(COLUMNS, ([_cell(c, getattr(v, c)) for c in COLUMNS] for v in ordered))


def _cell(column: str, value: Any) -> Any:
    if column in _JSON_FIELDS:
        return json.dumps(dict(value), sort_keys=True, separators=(",", ":"))
    if column == "rows":
        return ",".join(value)
    return ("1" if value else "0") if column == "sweep_loser" else value


def read_index(path: Path) -> list[CompiledVariant]:
    """``index.tsv`` back into variants; ``ValueError`` naming the file (and the line) when it
    is damaged: not UTF-8, a field past the csv limit, a link (never followed), too large."""
    try:
        raw = safefs.read_bytes(path.parent, path.name, limit=MAX_INDEX_BYTES)
    except safefs.LinkError as exc:
        raise ValueError(str(exc)) from None
    if len(raw) > MAX_INDEX_BYTES:
        raise ValueError(f"{path}: larger than {MAX_INDEX_BYTES // 2**20} MiB; not an index tritongate wrote")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); the index is damaged") from None
    out: list[CompiledVariant] = []
    first_line: dict[tuple[str, str, str], int] = {}
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter="\t")
    try:
        if missing := set(COLUMNS) - set(reader.fieldnames or ()):
            raise ValueError(f"{path}: missing columns {sorted(missing)}")
        for line, rec in enumerate(reader, start=2):
            try:
                kw: dict[str, Any] = {c: rec[c] for c in COLUMNS}
                for c in _JSON_FIELDS:
                    kw[c] = json.loads(rec[c])
                    if not isinstance(kw[c], dict):
                        raise ValueError(f"{c} must be a JSON object")
                kw["launches"] = int(rec["launches"])
                kw["sweep_loser"] = rec["sweep_loser"] == "1"
                kw["rows"] = tuple(r for r in rec["rows"].split(",") if r)
                key = (kw["case"], kw["kernel"], kw["compile_hash"])
                if key in first_line:  # the writer keeps one line a variant, its rows joined
                    raise ValueError(f"the variant {key[0]} {key[1]} {key[2][:16]} is listed twice (line "
                                     f"{first_line[key]} too); the index is damaged")
                first_line[key] = line
                out.append(CompiledVariant(**kw))
            except (ValueError, TypeError) as exc:
                raise ValueError(f"{path}: line {line}: {exc}") from None
    except csv.Error as exc:  # a NUL byte, a field past the csv module's limit
        raise ValueError(f"{path}: line {len(out) + 2}: {exc}; the index is damaged") from None
    return out


MAX_INDEX_BYTES = 256 * 2**20

