"""Resuming a calibration: a step that finished is read back, never measured again.

A calibration of ``pr`` runs for over ten minutes. ``settings.json`` (written first) holds what
it was started with, so ``--resume`` goes on with exactly that; each finished paired run leaves
``step.json`` (written last, atomically: a step without it is run again), the aim ``aim.json``.
``measure.json`` holds the options every step is measured and judged with (``--max-rounds``,
``--rounds``, ``--min-effect`` ...): a resume given other ones is refused, so that no calibration
mixes steps measured two ways.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any, Callable, Mapping

from tritongate.atomicio import write_json_atomic
from tritongate.calibrate.aim import RowAim
from tritongate.errors import GateError, UsageError
from tritongate.workdir import held_alone

SETTINGS = "settings.json"
STEP_DONE = "step.json"
AIM_DONE = "aim.json"
MEASURE = "measure.json"
LOCK = ".lock"  # held while a calibrate process works in the folder
MEASURE_KIND = "tritongate-calibration-measurement"
KIND = "tritongate-calibration-settings"
AIM_KIND = "tritongate-calibration-aim"  # schema 1; since 2026-12-07 also "gpus" (absent: none known)


@dataclass(frozen=True)
class Settings:
    suite: str  # a builtin suite's name, or the absolute path of a suite file
    fractions: tuple[float, ...]
    aa_runs: int
    record: str
    only_ops: tuple[str, ...] = ()
    only_dtypes: tuple[str, ...] = ()
    backend: str = "auto"
    shape_file: str | None = None  # absolute
    python: str | None = None  # the build's interpreter (None: the one running calibrate)

    def write(self, folder: Path) -> Path:
        write_json_atomic(Path(folder) / SETTINGS, {"kind": KIND, "schema": 1, **asdict(self)})
        return Path(folder) / SETTINGS


def load_settings(folder: Path) -> Settings:
    """The settings a calibration folder was started with (``UsageError`` naming the folder)."""
    from pydantic import Field

    from tritongate.validation import validate
    from tritongate.validation.core import StrictDoc

    class _Settings(StrictDoc):  # its kind is checked first
        schema_: int = Field(alias="schema")
        suite: str
        fractions: list[Annotated[float, Field(gt=0, lt=1)]] = Field(min_length=1)
        aa_runs: int = Field(ge=1)
        record: str
        only_ops: list[str] = []
        only_dtypes: list[str] = []
        backend: str = "auto"
        shape_file: str | None = None
        python: str | None = None

    from tritongate import safefs

    path = Path(folder) / SETTINGS
    try:  # a link (out of the folder, or anywhere) is refused, never followed
        raw = json.loads(safefs.read_bytes(Path(folder), SETTINGS, limit=1 << 20).decode("utf-8"))
    except safefs.LinkError as exc:
        raise UsageError(f"--resume {folder}: {exc}; a calibration's settings are a file in its folder") from None
    except OSError as exc:
        raise UsageError(f"--resume {folder}: cannot read {SETTINGS} ({exc.strerror or exc}); pass a folder "
                         "that `tritongate calibrate` made (calibrate-<suite>_<UTC>)") from None
    except ValueError as exc:
        raise UsageError(f"--resume {folder}: {SETTINGS} is damaged ({exc}); start a new calibration") from None
    if not isinstance(raw, dict) or raw.get("kind") != KIND or raw.get("schema") != 1:
        raise UsageError(f"--resume {folder}: {SETTINGS} is damaged (not {KIND} schema 1); start a new calibration")
    unknown = sorted(set(raw) - {"kind", "schema", *_Settings.model_fields})
    if unknown:  # a key this version does not know would be dropped without a word
        raise UsageError(f"--resume {folder}: {SETTINGS} has keys this tritongate does not know "
                         f"({', '.join(map(str, unknown[:5]))}); start a new calibration")
    doc = validate(_Settings, raw, source=path, error=UsageError)
    return Settings(suite=doc.suite, fractions=tuple(doc.fractions), aa_runs=doc.aa_runs, record=doc.record,
                    only_ops=tuple(doc.only_ops), only_dtypes=tuple(doc.only_dtypes), backend=doc.backend,
                    shape_file=doc.shape_file, python=doc.python)


def check_same(settings: Settings, given: Mapping[str, Any]) -> None:
    """Options given with ``--resume`` must be the calibration's own (None: not given)."""
    for name, value in given.items():
        if value is not None and value != getattr(settings, name):
            raise UsageError(f"--resume: this calibration was started with {name} {getattr(settings, name)!r}, "
                             f"not {value!r}; drop the option to go on with it, or start a new calibration")


def locked(folder: Path) -> contextlib.AbstractContextManager[None]:
    """The folder for this process alone: a second ``calibrate`` (two ``--resume`` of one folder)
    would run the same steps at once, each timing its rows beside the other's on one device."""
    return held_alone(Path(folder) / LOCK, f"another tritongate calibrate process is working in {folder}; wait "
                      "for it, or stop it first (then go on with --resume)")


# a field of ``measurement_of`` and the option that sets it, for the refusal's message
_OPTIONS = {"config_overrides.rounds": "--rounds", "config_overrides.samples_per_round": "--samples-per-round",
            "config_overrides.l2": "--l2", "schedule_overrides.max_rounds": "--max-rounds",
            "schedule_overrides.row_budget_s": "--row-budget", "schedule_overrides.run_budget_s": "--run-budget",
            "row_timeout_s": "--row-timeout", "share_inputs": "--inputs", "allow_busy_gpu": "--allow-busy-gpu",
            "isolate_tuner_cache": "--isolate-tuner-cache", "policy.min_effect": "--min-effect",
            "policy.noise_z": "--noise-z", "policy.min_samples": "--min-samples",
            "policy.process_sd": "--process-sd"}


def measurement_of(request: Any) -> dict[str, Any]:
    """What a step's paired run is measured and judged with beyond ``settings.json``, as JSON."""
    from tritongate.atomicio import jsonable

    schedule = request.schedule
    doc = {"config_overrides": dict(request.config_overrides), "schedule_overrides": dict(request.schedule_overrides),
           "schedule": asdict(schedule) if schedule is not None else None, "schedule_scale": request.schedule_scale,
           "share_inputs": request.share_inputs, "row_timeout_s": request.row_timeout_s,
           "allow_busy_gpu": request.allow_busy_gpu, "isolate_tuner_cache": request.isolate_tuner_cache,
           "worker_pool": request.worker_pool, "policy": asdict(request.policy)}
    return json.loads(json.dumps(jsonable(doc), allow_nan=False))  # as it reads back from the file


def _flat(doc: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in doc.items():
        if isinstance(value, dict):  # an empty one adds nothing: {} and absent are alike
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def keep_measurement(folder: Path, request: Any) -> None:
    """Write ``measure.json`` on a calibration's first start; on a resume, ``UsageError`` unless
    ``request`` measures as the steps before it did (a folder from before the file: written now)."""
    path = Path(folder) / MEASURE
    now = measurement_of(request)
    if not path.is_file():
        write_json_atomic(path, {"kind": MEASURE_KIND, "schema": 1, "measurement": now})
        return
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(raw, dict) or raw.get("kind") != MEASURE_KIND or raw.get("schema") != 1 \
                or not isinstance(raw.get("measurement"), dict):
            raise ValueError(f"not {MEASURE_KIND} schema 1")
    except (OSError, ValueError) as exc:
        raise UsageError(f"--resume {folder}: {MEASURE} is damaged ({exc}); start a new calibration") from None
    before, given = _flat(raw["measurement"]), _flat(now)
    changed = [k for k in sorted(set(before) | set(given)) if before.get(k) != given.get(k)]
    if changed:
        said = "; ".join(f"{_OPTIONS.get(k, k)}: {before.get(k)!r} then, {given.get(k)!r} now" for k in changed[:5])
        raise UsageError(f"--resume {folder}: its steps were measured with other options ({said}); pass the options "
                         f"it was started with (kept in {path}), or start a new calibration")


def resumable(run: Callable[[Any], Any], regate: Callable[[Any, Path], Any],
              log: Callable[[str], None] = lambda _: None) -> Callable[[Any], Any]:
    """``run`` (a PairRequest -> PairOutcome) that reads a step back when its directory
    (``request.out``) holds a finished one; ``regate(request, pair_dir)`` rebuilds its outcome.
    A step.json that cannot be read back is a ``UsageError`` naming it and the fix."""

    def wrapped(request: Any) -> Any:
        step = Path(request.out)
        done = step / STEP_DONE
        if done.is_file():
            fix = f"delete {done} to measure the step again"
            try:
                doc = json.loads(done.read_text(encoding="utf-8"))
                pair = step / str(doc["pair"])  # relative: a copied calibration reads its own pairs
                wall = float(doc.get("wall_s", 0.0))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise UsageError(f"{done}: damaged ({type(exc).__name__}: {exc}); {fix}") from None
            try:
                outcome = regate(request, pair)
            except (GateError, OSError) as exc:
                raise UsageError(f"{step.name}: its finished paired run {pair} cannot be read back ({exc}); "
                                 f"{fix}") from None
            outcome.wall_s = wall
            log(f"{step.name}: finished before, read back from {pair}")
            return outcome
        t0 = time.perf_counter()
        outcome = run(request)
        if outcome.result is not None:
            wall = getattr(outcome, "wall_s", 0.0) or time.perf_counter() - t0  # the pair's own, as reported
            write_json_atomic(done, {"pair": os.path.relpath(Path(outcome.path).resolve(), step.resolve()),
                                     "wall_s": wall})
        return outcome
    return wrapped


@dataclass(frozen=True)
class AimProgress:
    """The aim step as far as it went: rows aimed, rows that could not be, its cost, whether it finished."""

    aims: dict[str, RowAim]
    failed: dict[str, str]
    wall_s: float
    complete: bool
    gpus: tuple[str, ...] = ()  # the physical GPUs the aim's workers ran on (a resumed aim may add one)


def save_aims(folder: Path, progress: AimProgress) -> None:
    write_json_atomic(Path(folder) / AIM_DONE, {
        "kind": AIM_KIND, "schema": 1, "complete": progress.complete, "wall_s": round(progress.wall_s, 1),
        "gpus": list(progress.gpus),
        "failed": dict(progress.failed), "rows": {k: a.to_dict() for k, a in progress.aims.items()}})


def load_aims(folder: Path) -> AimProgress | None:
    """The aim step so far, or None; a damaged aim.json is a ``UsageError`` naming it and the fix."""
    path = Path(folder) / AIM_DONE
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc.get("kind") != AIM_KIND or doc.get("schema") != 1:
            raise ValueError(f"not {AIM_KIND} schema 1")
        aims = {str(key): RowAim.from_dict(key, a) for key, a in doc["rows"].items()}
        return AimProgress(aims, {str(k): str(v) for k, v in doc["failed"].items()}, float(doc["wall_s"]),
                           doc["complete"] is True, gpus=tuple(str(g) for g in doc.get("gpus") or ()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"{path}: damaged ({type(exc).__name__}: {exc}); delete it to aim again") from None
