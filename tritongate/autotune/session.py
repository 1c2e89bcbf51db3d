"""Record and replay autotune choices by patching the tuners' ``run`` at class level.

Record: after every call, read back ``self.cache[key]`` — the config this call used.
(Never "which key is new": a warm cache adds no key, so a diff of keys records nothing.)

Replay: before every call, unconditionally put the recorded config into ``self.cache[key]``,
taken from the kernel's own ``configs`` so its ``pre_hook`` survives; the tuner then finds
the key cached and benchmarks nothing. Fallbacks tune live and mark the row:
``AUTOTUNE_REPLAY_FALLBACK reason=key_missing|config_not_in_space|compile_failed[_no_evict]
kernel=<id>``.

Works on Triton 3.2-3.9 (``Autotuner.run(*args, **kwargs)`` and its key recipe are the
same there) and on FlagGems' ``LibTuner`` (a subclass with its own ``run`` and
``get_key``), when flag_gems is importable.
"""

from __future__ import annotations

import contextlib
import importlib.util
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from tritongate import markers
from tritongate.autotune.configs import config_to_dict, jsonable, key_text, same_config
from tritongate.autotune.records import Record, RecordSet
from tritongate.harness.cuda_errors import is_fatal
from tritongate.variants import kernel_id

RECORD, REPLAY, OFF = "record", "replay", "off"


def tuner_kernel_id(tuner: Any) -> str:
    return kernel_id(getattr(tuner, "base_fn", None) or tuner.fn)


def autotune_key(tuner: Any, args: tuple, kwargs: dict) -> tuple:
    """The key ``Autotuner.run`` caches under: key-argument values, then the dtype of every
    tensor argument in signature order. ``LibTuner`` normalises it with its own ``get_key``."""
    if hasattr(tuner, "get_key") and type(tuner).__name__ != "Autotuner":
        try:
            return tuple(tuner.get_key(args))
        except TypeError:
            pass
    nargs = dict(zip(tuner.arg_names, args))
    all_args = {**nargs, **kwargs}
    named = {k: v for k, v in all_args.items() if k in tuner.arg_names}
    key = [named[k] for k in tuner.keys if k in named]
    key += [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
    return tuple(key)


def _evict(cache: Any, key: tuple) -> bool:
    try:
        del cache[key]
        return True
    except KeyError:
        return True
    except (TypeError, AttributeError, NotImplementedError):
        return False  # a persistent cache with no way to drop an entry


@dataclass
class RowAutotune:
    """What autotune did during one row."""

    mode: str
    sweep_benchmarks: int = 0
    kernels: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    markers: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "sweep_benchmarks": self.sweep_benchmarks,
                "kernels": [self.kernels[k] for k in sorted(self.kernels)]}


class AutotuneSession:
    def __init__(self, mode: str, replay: RecordSet | None = None) -> None:
        if mode not in (RECORD, REPLAY, OFF):
            raise ValueError(f"unknown autotune mode {mode!r}")
        if (mode == REPLAY) != (replay is not None):
            raise ValueError("replay mode needs a record set, and only replay mode takes one")
        self.mode = mode
        self.replay = replay
        self._records: dict[tuple[str, str], Record] = {}
        self._failed: set[tuple[str, str]] = set()
        self._row: RowAutotune = RowAutotune(mode)
        self._row_label: tuple[str, str] = ("", "")  # (op, "case/dtype")
        self._inside: set[int] = set()  # tuners mid-call: a subclass's run calling super().run
        # (tuner, key) pairs already handled in this row -> the config to inject (replay) or
        # None: the row's thousands of timed launches then skip matching and recording.
        self._settled: dict[tuple[int, tuple], Any] = {}

    # -- rows --------------------------------------------------------------------------------
    def begin_row(self, op: str, case: str, dtype: str) -> None:
        self._row = RowAutotune(self.mode)
        self._row_label = (op, f"{case}/{dtype}")
        self._settled.clear()

    def end_row(self) -> RowAutotune:
        row, self._row = self._row, RowAutotune(self.mode)
        return row

    def records(self) -> list[Record]:
        return list(self._records.values())

    # -- called from the patched tuners -----------------------------------------------------
    def count_benchmark(self) -> None:
        self._row.sweep_benchmarks += 1

    def _note(self, kid: str, key: tuple, config: Any, source: str) -> None:
        entry = {"kernel": kid, "key": jsonable(key), "config": config_to_dict(config), "source": source}
        self._row.kernels[(kid, key_text(key))] = entry

    def _mark(self, reason: str, kid: str) -> None:
        line = markers.make(markers.REPLAY_FALLBACK, reason=reason, kernel=kid)
        if line not in self._row.markers:
            self._row.markers.append(line)

    def call(self, tuner: Any, original: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        # single-config tuners never tune; a nested call is the same call seen twice
        if self.mode == OFF or len(tuner.configs) <= 1 or id(tuner) in self._inside:
            return original(tuner, *args, **kwargs)
        key = autotune_key(tuner, args, kwargs)
        settled = (id(tuner), key)
        if settled in self._settled:
            config = self._settled[settled]
            if config is not None:
                tuner.cache[key] = config
            return original(tuner, *args, **kwargs)
        kid = tuner_kernel_id(tuner)
        self._inside.add(id(tuner))
        try:
            if self.mode == REPLAY:
                result, injected = self._replay(tuner, original, kid, key, args, kwargs)
                self._settled[settled] = injected
            else:
                result = original(tuner, *args, **kwargs)
                self._record(tuner, kid, key)
                self._settled[settled] = None
            return result
        finally:
            self._inside.discard(id(tuner))

    def _record(self, tuner: Any, kid: str, key: tuple) -> None:
        try:
            config = tuner.cache[key]
        except (KeyError, TypeError):
            config = tuner.best_config  # key recipe drift: what this very call launched
        self._note(kid, key, config, "tuned")
        op, label = self._row_label
        match = (kid, key_text(key))
        old = self._records.get(match)
        cases = tuple(sorted(set(old.cases if old else ()) | {label}))
        self._records[match] = Record(op=old.op if old else op, kernel=kid, tuner=type(tuner).__name__,
                                      key=jsonable(key), config=config_to_dict(config), cases=cases)

    def _replay(self, tuner, original, kid, key, args, kwargs) -> tuple[Any, Any]:
        """Run one call under replay; return its result and the config injected (None when
        it fell back to live tuning)."""
        match = (kid, key_text(key))
        rec = self.replay.lookup(kid, key) if self.replay else None
        if rec is None:
            return self._tune_live("key_missing", tuner, original, kid, key, args, kwargs), None
        if match in self._failed:
            return self._tune_live("compile_failed", tuner, original, kid, key, args, kwargs), None
        config = next((c for c in tuner.configs if same_config(rec.config, c)), None)
        if config is None:
            return self._tune_live("config_not_in_space", tuner, original, kid, key, args, kwargs), None
        tuner.cache[key] = config  # unconditionally: a cached live winner must not win
        try:
            result = original(tuner, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the injected config no longer compiles/launches
            if is_fatal(exc):
                raise
            self._failed.add(match)
            evicted = _evict(tuner.cache, key)
            # live tuning; with no_evict the same bad config is read back and raises again
            reason = "compile_failed" if evicted else "compile_failed_no_evict"
            return self._tune_live(reason, tuner, original, kid, key, args, kwargs), None
        self._note(kid, key, config, "replayed")
        return result, config

    def _tune_live(self, reason, tuner, original, kid, key, args, kwargs) -> Any:
        """Fall back to the tuner's own choice (a sweep the first time, cached after) and
        mark the row."""
        self._mark(reason, kid)
        result = original(tuner, *args, **kwargs)
        self._note(kid, key, tuner.best_config, "fallback")
        return result

def _tuner_classes() -> list[type]:
    from triton.runtime.autotuner import Autotuner

    classes: list[type] = [Autotuner]
    for module in ("flag_gems.utils.libentry", "flaggems_vllm.utils.libentry"):
        top = module.split(".")[0]
        if importlib.util.find_spec(top) is None:
            continue
        try:
            mod = importlib.import_module(module)
        except Exception:  # noqa: BLE001 - a broken flag_gems install is not our failure
            continue
        lib = getattr(mod, "LibTuner", None)
        if isinstance(lib, type) and "run" in vars(lib):
            classes.append(lib)
    return classes


@contextlib.contextmanager
def autotune_session(session: AutotuneSession) -> Iterator[AutotuneSession]:
    """Patch every tuner class's ``run`` (and count ``_bench`` sweeps) for the block."""
    from triton.runtime.autotuner import Autotuner

    restores: list[Callable[[], None]] = []
    for cls in _tuner_classes():
        original = vars(cls)["run"]

        def run(self: Any, *args: Any, _original: Callable[..., Any] = original, **kwargs: Any) -> Any:
            return session.call(self, _original, args, kwargs)

        cls.run = run
        restores.append(lambda cls=cls, original=original: setattr(cls, "run", original))
    original_bench = vars(Autotuner)["_bench"]

    def _bench(self: Any, *args: Any, **kwargs: Any) -> Any:
        session.count_benchmark()
        return original_bench(self, *args, **kwargs)

    Autotuner._bench = _bench
    restores.append(lambda: setattr(Autotuner, "_bench", original_bench))
    try:
        yield session
    finally:
        for restore in reversed(restores):
            restore()
