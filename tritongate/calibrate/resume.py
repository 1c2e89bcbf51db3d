"""Resuming a calibration: a step that finished is read back, never measured again.

A calibration of ``pr`` runs for over ten minutes; a runner that is stopped or crashes part-way
keeps every finished step. ``settings.json`` (written first) holds what the calibration was
started with, so ``--resume`` goes on with exactly that; each finished paired run leaves
``step.json`` in its step directory (written last, atomically: a step without it is run again),
and the aim step leaves ``aim.json``.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from tritongate.atomicio import write_json_atomic
from tritongate.calibrate.aim import AimPoint, RowAim
from tritongate.errors import UsageError

SETTINGS = "settings.json"
STEP_DONE = "step.json"
AIM_DONE = "aim.json"
KIND = "tritongate-calibration-settings"


@dataclass(frozen=True)
class Settings:
    suite: str
    fractions: tuple[float, ...]
    aa_runs: int
    record: str
    only_ops: tuple[str, ...] = ()
    only_dtypes: tuple[str, ...] = ()

    def write(self, folder: Path) -> Path:
        write_json_atomic(Path(folder) / SETTINGS, {"kind": KIND, "schema": 1, **asdict(self)})
        return Path(folder) / SETTINGS


def load_settings(folder: Path) -> Settings:
    """The settings a calibration folder was started with (``UsageError`` naming the folder)."""
    path = Path(folder) / SETTINGS
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc.get("kind") != KIND or doc.get("schema") != 1:
            raise ValueError(f"not {KIND} schema 1")
        return Settings(suite=str(doc["suite"]), fractions=tuple(float(f) for f in doc["fractions"]),
                        aa_runs=int(doc["aa_runs"]), record=str(doc["record"]),
                        only_ops=tuple(doc.get("only_ops", ())), only_dtypes=tuple(doc.get("only_dtypes", ())))
    except OSError as exc:
        raise UsageError(f"--resume {folder}: cannot read {SETTINGS} ({exc.strerror or exc}); pass a folder "
                         "that `tritongate calibrate` made (calibrate-<suite>_<UTC>)") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"--resume {folder}: {SETTINGS} is damaged ({exc}); start a new calibration") from None


def check_same(settings: Settings, given: Mapping[str, Any]) -> None:
    """Options given with ``--resume`` must be the calibration's own (None: not given)."""
    for name, value in given.items():
        if value is not None and value != getattr(settings, name):
            raise UsageError(f"--resume: this calibration was started with {name} {getattr(settings, name)!r}, "
                             f"not {value!r}; drop the option to go on with it, or start a new calibration")


def resumable(run: Callable[[Any], Any], regate: Callable[[Any, Path], Any],
              log: Callable[[str], None] = lambda _: None) -> Callable[[Any], Any]:
    """``run`` (a PairRequest -> PairOutcome) that reads a step back when its directory
    (``request.out``) holds a finished one; ``regate(request, pair_dir)`` rebuilds its outcome."""

    def wrapped(request: Any) -> Any:
        done = Path(request.out) / STEP_DONE
        if done.is_file():
            doc = json.loads(done.read_text(encoding="utf-8"))
            outcome = regate(request, Path(doc["pair"]))
            outcome.wall_s = float(doc.get("wall_s", 0.0))
            log(f"{Path(request.out).name}: finished before, read back from {doc['pair']}")
            return outcome
        t0 = time.perf_counter()
        outcome = run(request)
        if outcome.result is not None:
            wall = getattr(outcome, "wall_s", 0.0) or time.perf_counter() - t0  # the pair's own, as reported
            write_json_atomic(done, {"pair": str(Path(outcome.path).resolve()), "wall_s": wall})
        return outcome
    return wrapped


def save_aims(folder: Path, aims: Mapping[str, RowAim], notes: Sequence[str], wall_s: float) -> None:
    write_json_atomic(Path(folder) / AIM_DONE, {"wall_s": round(wall_s, 1), "notes": list(notes),
                                                "rows": {k: a.to_dict() for k, a in aims.items()}})


def load_aims(folder: Path) -> tuple[dict[str, RowAim], list[str], float] | None:
    """The aim step's rows, notes and cost, when it finished before; else None."""
    path = Path(folder) / AIM_DONE
    if not path.is_file():
        return None
    doc = json.loads(path.read_text(encoding="utf-8"))
    aims = {key: RowAim(key=key, zero_us=float(a["zero_us"]),
                        points=tuple(AimPoint(int(s), float(e), int(n)) for s, e, n in a["points"]),
                        spins_ns={k: int(v) for k, v in a["spins_ns"].items()},
                        aimed={k: float(v) for k, v in a["aimed"].items()}, missed=dict(a["missed"]),
                        paired_ladder=bool(a["paired_ladder"]), tried={k: int(v) for k, v in a["tried"].items()},
                        unsure=tuple(a["unsure"]))
            for key, a in doc["rows"].items()}
    return aims, list(doc["notes"]), float(doc["wall_s"])
