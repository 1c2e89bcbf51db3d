"""The calibration's results: per row, per size class, the goals, and a one-line summary
that every verdict can cite. Versioned JSON, validated when read."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from pydantic import ConfigDict, TypeAdapter, ValidationError

from tritongate.atomicio import write_json_atomic
from tritongate.errors import SchemaVersionError, UsageError
from tritongate.model.verdict import CALLED, Verdict
from tritongate.model.keys import row_key
from tritongate.validation import describe

SCHEMA = 2  # 2: rows carry their aim (spins timed, the effect aimed at), no gain
SUMMARY_SCHEMAS = (1, 2)  # files whose summary a verdict can cite (since 2026-12-07 it may hold `scope`)
KIND = "tritongate-calibration"
CALIBRATION_JSON = "calibration.json"
CALIBRATION_ENV = "TRITONGATE_CALIBRATION"
DEFAULT_FRACTIONS = (0.01, 0.02, 0.05)
# Kernel-time classes (µs, by the row's A/A median): launch-bound, short, medium, long.
SIZE_CLASSES: tuple[tuple[str, float, float], ...] = (
    ("< 3 µs", 0.0, 3.0), ("3–10 µs", 3.0, 10.0), ("10–100 µs", 10.0, 100.0), ("≥ 100 µs", 100.0, math.inf))
# The goals a calibration is held to: (fraction, smallest kernel time in µs, least catch rate).
GOALS: tuple[tuple[float, float, float], ...] = ((0.02, 10.0, 0.95), (0.05, 0.0, 0.95))
SIZE_BAND = (0.75, 1.25)  # a plant "measures at" its size within ±25 %
CAUGHT = Verdict.REGRESSED
TIMED_CALLS = (*CALLED, Verdict.UNCHANGED)
# how the dataclasses below are read back from calibration.json (``load_calibration``)
_STRICT = ConfigDict(strict=True, allow_inf_nan=False)


def size_class(kernel_us: float) -> str:
    for name, lo, hi in SIZE_CLASSES:
        if lo <= kernel_us < hi:
            return name
    raise ValueError(f"kernel time {kernel_us!r} µs has no size class")


def false_verdicts(n: int) -> str:
    """``"1 false verdict"``, ``"3 false verdicts"``."""
    return f"{n} false verdict{'' if n == 1 else 's'}"


def fraction_key(fraction: float) -> str:
    """``0.02`` -> ``"0.02"``: the JSON key of a planted fraction."""
    return f"{fraction:g}"


@dataclass(frozen=True)
class PlantedOutcome:
    __pydantic_config__ = _STRICT

    delay_ns: int  # spun per program
    verdict: str
    effect: float | None  # the gate's estimate, candidate / base - 1
    aimed: float | None = None  # what the spin added when aimed, in one process (the planted size)

    @property
    def caught(self) -> bool:
        return self.verdict == CAUGHT


@dataclass(frozen=True)
class RowCalibration:
    __pydantic_config__ = _STRICT

    op: str
    case: str
    dtype: str
    kernel_us: float  # A/A base median, the unplanted kernel
    zero_us: float | None  # the planted spin compiled in and 0 (the planted runs' base), in the aim step
    aa_verdicts: tuple[str, ...]  # one per A/A run
    aa_effects: tuple[float | None, ...]
    detectable: float | None  # smallest effect the row could call in its (first) A/A run
    planted: Mapping[str, PlantedOutcome] = field(default_factory=dict)  # fraction key -> outcome
    aim: Mapping[str, Any] | None = None  # ``aim.RowAim.to_dict()``: every spin timed, and why a size was not planted

    def __post_init__(self) -> None:
        if not (math.isfinite(self.kernel_us) and self.kernel_us > 0):
            raise ValueError(f"{self.key}: kernel time {self.kernel_us!r} µs is not a positive number")
        if self.aim is not None and not isinstance(self.aim.get("missed", {}), Mapping):
            raise ValueError(f"{self.key}: its aim's missed sizes are not an object")

    @property
    def key(self) -> str:
        return row_key(self.op, self.case, self.dtype)

    @property
    def size_class(self) -> str:
        return size_class(self.kernel_us)

    @property
    def aa_false(self) -> int:
        return sum(v in CALLED for v in self.aa_verdicts)

    @property
    def aa_timed(self) -> int:
        """A/A runs in which the row was timed and called (a missing or rejected row checked nothing)."""
        return sum(v in TIMED_CALLS for v in self.aa_verdicts)

    @property
    def smallest_caught(self) -> float | None:
        caught = [float(k) for k, o in self.planted.items() if o.caught]
        return min(caught) if caught else None


@dataclass(frozen=True)
class Rate:
    rows: int  # planted
    caught: int
    unplanted: int = 0  # calibrated rows the aim could not plant at this size (not counted in rows)
    fraction: float | None = None  # the size planted
    measured: float | None = None  # the median of the gate's estimates of the plants

    @property
    def rate(self) -> float | None:
        return self.caught / self.rows if self.rows else None

    @property
    def on_size(self) -> bool | None:
        """Whether the plants measured within ±25 % of their size: a class caught at "2 %" whose
        plants the gate measured at 2.7 % was shown at 2.7 %, not 2 % (None: nothing measured)."""
        if self.measured is None or self.fraction is None:
            return None
        return SIZE_BAND[0] * self.fraction <= self.measured <= SIZE_BAND[1] * self.fraction


@dataclass(frozen=True)
class Goal:
    fraction: float
    min_kernel_us: float
    least_rate: float
    rate: Rate

    @property
    def counted(self) -> int:
        """Rows the goal is judged on: a row the aim could not plant at the size counts as a miss
        (the calibration cannot say the gate would catch it)."""
        return self.rate.rows + self.rate.unplanted

    @property
    def met(self) -> bool | None:
        """None where nothing was counted, or the plants did not measure at the goal's size."""
        if self.counted == 0 or self.rate.on_size is False:
            return None
        return self.rate.caught / self.counted >= self.least_rate

    def text(self) -> str:
        rows = "rows ≥ 10 µs" if self.min_kernel_us else "all rows"
        got = "no rows" if self.counted == 0 else \
            f"{self.rate.caught} of {self.counted} ({self.rate.caught / self.counted:.0%})"
        if self.rate.unplanted:
            got += f", counting {self.rate.unplanted} that could not be planted at {self.fraction:.0%} as missed"
        if self.rate.on_size is False:
            got += (f"; not judged: the plants measured {self.rate.measured:.2%} (median), outside ±25 % of "
                    f"{self.fraction:.0%}")
        return f"{self.fraction:.0%} caught on ≥ {self.least_rate:.0%} of {rows}: {got}"


@dataclass(frozen=True)
class Calibration:
    __pydantic_config__ = _STRICT

    created_utc: str
    suite: str
    runner: Mapping[str, Any]  # device, driver, torch, triton, host
    fractions: tuple[float, ...]
    rows: tuple[RowCalibration, ...]
    steps: tuple[Mapping[str, Any], ...] = ()  # name, fraction, wall_s, pair directory
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.fractions or any(not (0 < f < 1) for f in self.fractions):
            raise ValueError(f"planted fractions {self.fractions!r}: each must be in (0, 1)")

    @property
    def aa_rows(self) -> int:
        """Row checks the A/A runs made: timed and called, in every A/A run."""
        return sum(r.aa_timed for r in self.rows)

    @property
    def aa_false(self) -> int:
        return sum(r.aa_false for r in self.rows)

    def rate(self, fraction: float, *, size: str | None = None, min_kernel_us: float = 0.0) -> Rate:
        key = fraction_key(fraction)
        rows = [r for r in self.rows if r.kernel_us >= min_kernel_us and (size is None or r.size_class == size)]
        planted = [r for r in rows if key in r.planted]
        unplanted = sum(r.aim is not None and key in (r.aim.get("missed") or {}) for r in rows)
        effects = sorted(e for r in planted if (e := r.planted[key].effect) is not None)
        measured = (effects[(len(effects) - 1) // 2] + effects[len(effects) // 2]) / 2 if effects else None
        return Rate(len(planted), sum(r.planted[key].caught for r in planted), unplanted, fraction, measured)

    def goals(self) -> list[Goal]:
        return [Goal(f, lo, least, self.rate(f, min_kernel_us=lo)) for f, lo, least in GOALS
                if any(math.isclose(f, g) for g in self.fractions)]

    def summary(self) -> "CalibrationSummary":
        two = next((f for f in self.fractions if math.isclose(f, 0.02)), self.fractions[0])
        rate = self.rate(two)
        return CalibrationSummary(created_utc=self.created_utc, device=str(self.runner.get("device", "?")),
                                  aa_rows=self.aa_rows, aa_false=self.aa_false, fraction=two,
                                  caught=rate.caught, planted_rows=rate.rows, unplanted=rate.unplanted,
                                  scope=str(self.runner.get("scope") or ""))

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA, "kind": KIND, "created_utc": self.created_utc, "suite": self.suite,
            "runner": dict(self.runner), "fractions": list(self.fractions), "notes": list(self.notes),
            "summary": self.summary().doc(),
            "aa": {"rows": self.aa_rows, "false_verdicts": self.aa_false},
            "catch": {fraction_key(f): _rate_dict(self.rate(f)) for f in self.fractions},
            "classes": [{"name": name, "lo_us": lo, "hi_us": None if math.isinf(hi) else hi,
                         "rows": sum(r.size_class == name for r in self.rows),
                         "catch": {fraction_key(f): _rate_dict(self.rate(f, size=name)) for f in self.fractions}}
                        for name, lo, hi in SIZE_CLASSES],
            "goals": [{"text": g.text(), "fraction": g.fraction, "min_kernel_us": g.min_kernel_us,
                       "least_rate": g.least_rate, "met": g.met, **_rate_dict(g.rate)} for g in self.goals()],
            "steps": [dict(s) for s in self.steps],
            "rows": [_row_dict(r) for r in self.rows],
        }

    def write(self, path: Path) -> Path:
        """calibration.json, checked by the model ``load_calibration`` reads it with before it
        is written: a calibration its readers would refuse is a bug here (``ValueError``)."""
        doc = self.to_dict()
        try:
            _FILE.validate_json(json.dumps(doc, allow_nan=False))
        except ValidationError as exc:
            raise ValueError(describe(exc, path)) from None
        write_json_atomic(path, doc)
        return path


def _rate_dict(rate: Rate) -> dict[str, Any]:
    return {"rows": rate.rows, "caught": rate.caught, "rate": rate.rate, "unplanted": rate.unplanted,
            "measured": rate.measured, "on_size": rate.on_size}


def _row_dict(r: RowCalibration) -> dict[str, Any]:
    return {"op": r.op, "case": r.case, "dtype": r.dtype, "kernel_us": r.kernel_us, "zero_us": r.zero_us,
            "size_class": r.size_class, "aa_verdicts": list(r.aa_verdicts), "aa_effects": list(r.aa_effects),
            "detectable": r.detectable, "smallest_caught": r.smallest_caught,
            "planted": {k: asdict(o) for k, o in r.planted.items()}, "aim": r.aim}


# calibration.json read back: its keys beyond the dataclasses' (the derived summaries, a row's
# size class) are ignored
_FILE = TypeAdapter(Calibration)


@dataclass(frozen=True)
class CalibrationSummary:
    """What a verdict's footer says about the runner's latest calibration."""

    created_utc: str
    device: str
    aa_rows: int
    aa_false: int
    fraction: float
    caught: int
    planted_rows: int
    unplanted: int = 0  # rows the calibration could not plant at that size (not in planted_rows)
    scope: str = ""  # "one GPU" or "runner class (N GPUs)": where its steps ran ("" in older files)

    def line(self, verdict_device: str | None = None) -> str:
        rate = f"{self.caught} of {self.planted_rows} rows" if self.planted_rows else "no rows planted"
        if self.unplanted:
            rate += f" ({self.unplanted} more could not be planted)"
        # steps on several physical GPUs calibrated the class of runner PRs meet, not one GPU
        where = f"this {self.scope}" if self.scope.startswith("runner class") else "this runner"
        other_gpu = bool(verdict_device and self.device and verdict_device != self.device)
        if other_gpu:
            where = f"{self.device}, not this GPU ({verdict_device}),"
        text = (f"Calibrated on {where} {self.created_utc[:10]} (`tritongate calibrate`): "
                f"{false_verdicts(self.aa_false)} in {self.aa_rows} A/A rows; a {self.fraction:.0%} slowdown "
                f"caught on {rate}.")
        return "⚠️ " + text if other_gpu else text

    def doc(self) -> dict[str, Any]:
        """As calibration.json and verdict.json hold it (no ``scope`` where it is unknown, as before it was kept)."""
        return {k: v for k, v in asdict(self).items() if k != "scope" or v}


def load_calibration(path: Path) -> Calibration:
    """A whole calibration.json (or the folder holding one) back as a ``Calibration``: the
    dataclasses above are the file's model, validated from its bytes (strict: a boolean is
    not a time, a null kernel time is refused; the summaries the file also holds are derived,
    so they are not read back)."""
    path = path / CALIBRATION_JSON if path.is_dir() else path
    load_summary(path)  # the file, its kind and schema, with their one-line errors
    try:
        return _FILE.validate_json(path.read_bytes())
    except ValidationError as exc:
        raise UsageError(f"{describe(exc, path)}; not a complete calibration: calibrate again") from None


def load_summary(path: Path) -> CalibrationSummary:
    """The summary of a calibration.json (or of a folder holding one). Raises ``UsageError``
    naming the file and the fix."""
    path = path / CALIBRATION_JSON if path.is_dir() else path
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the calibration ({exc.strerror or exc}); pass the calibration.json "
                         "(or its folder) that `tritongate calibrate` wrote on this runner") from None
    except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply for json
        raise UsageError(f"{path}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        raise UsageError(f"{path}: not a tritongate calibration (no \"kind\": \"{KIND}\")")
    schema = doc.get("schema")
    if schema not in SUMMARY_SCHEMAS:  # the summary a verdict cites is the same in schema 1 and 2
        advice = "upgrade tritongate" if isinstance(schema, int) and schema > SCHEMA else "calibrate again"
        raise SchemaVersionError(f"{path}: calibration schema {schema!r}, this tritongate reads "
                                 f"{', '.join(map(str, SUMMARY_SCHEMAS))}; {advice}")
    from tritongate.validation import validate
    from tritongate.validation.core import StrictDoc

    from pydantic import Field

    class _Summary(StrictDoc):
        created_utc: str
        device: str
        aa_rows: int = Field(ge=0)
        aa_false: int = Field(ge=0)
        fraction: float = Field(gt=0, lt=1)
        caught: int = Field(ge=0)
        planted_rows: int = Field(ge=0)
        unplanted: int = Field(default=0, ge=0)
        scope: str = ""

    doc_summary = validate(_Summary, doc.get("summary"), source=f"{path}: summary", error=UsageError)
    if doc_summary.aa_false > doc_summary.aa_rows or doc_summary.caught > doc_summary.planted_rows:
        raise UsageError(f"{path}: summary counts more false verdicts or catches than rows; calibrate again")
    summary = CalibrationSummary(**doc_summary.model_dump())
    runner = doc.get("runner")
    scope = runner.get("scope") if isinstance(runner, dict) else None
    if not summary.scope and isinstance(scope, str):  # written before the summary kept it
        summary = replace(summary, scope=scope)
    return summary
