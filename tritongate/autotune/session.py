"""Record and replay autotune choices by patching the tuners' ``run`` at class level.

docs/record-replay.md tells the modes, the key recipes and the fallback reasons. Record reads
back ``self.cache[key]`` after every call, never "which key is new" (a warm cache adds no key).
Replay injects the kernel's own config (its ``pre_hook`` kept) unconditionally and verifies
every call: ``best_config`` must be it, and no selection may have run (no ``_bench`` counted,
no fresh ``configs_timings``: a sweep answered from FlagGems' benchmark cache still rebinds
them). A key the tuner's own ``get_key`` cannot give is unknown, never guessed another way.
"""

from __future__ import annotations

import contextlib
import importlib.util
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from tritongate import markers
from tritongate.autotune.configs import config_to_dict, jsonable, key_text, same_config
from tritongate.autotune.records import Record, RecordSet
from tritongate.backends import capture_only_active
from tritongate.harness.cuda_errors import is_fatal
from tritongate.ir.variants import LIBENTRY_MODULES, kernel_id

RECORD, REPLAY, OFF = "record", "replay", "off"


def tuner_kernel_id(tuner: Any) -> str:
    return kernel_id(getattr(tuner, "base_fn", None) or tuner.fn)


class AutotuneKeyError(Exception):
    """The tuner's own ``get_key`` failed on the arguments its ``run`` would pass it."""


def _has_own_get_key(tuner: Any) -> bool:
    from triton.runtime.autotuner import Autotuner

    own = getattr(type(tuner), "get_key", None)
    # Triton 3.2-3.9 has no get_key; should one appear, it goes with Triton's own recipe
    return own is not None and own is not getattr(Autotuner, "get_key", None)


def autotune_key(tuner: Any, args: tuple, kwargs: dict) -> Any:
    """The key the tuner's ``run`` caches this call under (``AutotuneKeyError``: its own
    ``get_key`` failed)."""
    # the mapping both Autotuner.run and LibTuner.run build: positional arguments by arg_names,
    # keyword arguments over them, only names in arg_names
    named = {**dict(zip(tuner.arg_names, args)), **kwargs}
    named = {k: v for k, v in named.items() if k in tuner.arg_names}
    if _has_own_get_key(tuner):
        try:
            return tuner.get_key(named)
        except Exception as exc:  # any failure means the key is unknown
            if is_fatal(exc):
                raise
            raise AutotuneKeyError(f"{type(tuner).__name__}.get_key: {type(exc).__name__}: {exc}") from exc
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
    def __init__(self, mode: str, replay: RecordSet | None = None, *, presweep: RecordSet | None = None) -> None:
        """``presweep``: record mode only: winners a parallel sweep already chose, put into
        the tuners' caches instead of sweeping again (recorded as ``presweep``)."""
        if mode not in (RECORD, REPLAY, OFF):
            raise ValueError(f"unknown autotune mode {mode!r}")
        if (mode == REPLAY) != (replay is not None):
            raise ValueError("replay mode needs a record set, and only replay mode takes one")
        if presweep is not None and mode != RECORD:
            raise ValueError("presweep winners are for record mode")
        self.mode, self.replay, self.presweep = mode, replay, presweep
        # an IR index capture executes no kernel: its sweep timings are noise, so every config
        # reads the same and the tuner keeps its first (two captures choose alike)
        self.capture_only = capture_only_active()
        self._records: dict[tuple[str, str], Record] = {}
        self._failed: set[tuple[str, str]] = set()
        self._row: RowAutotune = RowAutotune(mode)
        self._row_label: tuple[str, str] = ("", "")  # (op, "case/dtype")
        self._inside: set[int] = set()  # tuners mid-call: a subclass's run calling super().run
        self._benching: set[int] = set()  # tuners mid-_bench: a subclass's _bench calling super()
        # benchmarks per tuner (by id), ever: a call's own sweep is the difference across it,
        # so a nested tuner's sweep is not blamed on the tuner that launched it
        self._benches: dict[int, int] = {}
        # (tuner, key) pairs already handled in this row -> the config to inject (replay) or
        # None: the row's thousands of timed launches then skip matching and recording.
        self._settled: dict[tuple[int, Any], Any] = {}

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
    def benchmark(self, tuner: Any, original: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """One sweep benchmark of ``tuner``, counted once however many ``_bench`` layers it
        passes through."""
        if id(tuner) in self._benching:
            return original(tuner, *args, **kwargs)
        self._row.sweep_benchmarks += 1
        self._benches[id(tuner)] = self._benches.get(id(tuner), 0) + 1
        self._benching.add(id(tuner))
        try:
            timing = original(tuner, *args, **kwargs)
        finally:
            self._benching.discard(id(tuner))
        if self.capture_only:  # the launch was indexed; its time says nothing
            return [1.0] * len(timing) if isinstance(timing, (list, tuple)) else 1.0
        return timing

    def _note(self, kid: str, key: Any, config: Any, source: str, **extra: Any) -> None:
        entry = {"kernel": kid, "key": jsonable(key), "config": config_to_dict(config), "source": source}
        entry.update({k: jsonable(v) for k, v in extra.items()})
        self._row.kernels[(kid, key_text(key))] = entry

    def _mark(self, reason: str, kid: str) -> None:
        line = markers.make(markers.REPLAY_FALLBACK, reason=reason, kernel=kid)
        if line not in self._row.markers:
            self._row.markers.append(line)

    def call(self, tuner: Any, original: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        # single-config tuners never tune; a nested call is the same call seen twice
        if self.mode == OFF or len(tuner.configs) <= 1 or id(tuner) in self._inside:
            return original(tuner, *args, **kwargs)
        self._inside.add(id(tuner))
        try:
            return self._call(tuner, original, args, kwargs)
        finally:
            self._inside.discard(id(tuner))

    def _call(self, tuner: Any, original: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        try:
            key = autotune_key(tuner, args, kwargs)
        except AutotuneKeyError as exc:
            return self._unkeyed(tuner, original, args, kwargs, exc)
        try:
            settled = (id(tuner), key)
            hash(settled)
        except TypeError:  # a get_key that returns a list (an SQL-backed cache takes one)
            settled = (id(tuner), key_text(key))
        if settled in self._settled:
            config = self._settled[settled]
            if config is None:
                return original(tuner, *args, **kwargs)
            tuner.cache[key] = config
            watch = self._watch(tuner)
            result = original(tuner, *args, **kwargs)
            if not self._verified(tuner, None, key, config, watch):
                self._settled[settled] = None  # marked; stop injecting where the tuner never reads
            return result
        kid = tuner_kernel_id(tuner)
        if self.mode == REPLAY:
            result, injected = self._replay(tuner, original, kid, key, args, kwargs)
            self._settled[settled] = injected
        else:
            injected = self._inject_presweep(tuner, kid, key)
            result = original(tuner, *args, **kwargs)
            self._record(tuner, kid, key, injected=injected)
            self._settled[settled] = None
        return result

    def _inject_presweep(self, tuner: Any, kid: str, key: Any) -> Any:
        """The parallel sweep's winner for this key, put into the tuner's cache (None: none)."""
        rec = self.presweep.lookup(kid, key) if self.presweep is not None else None
        config = next((c for c in tuner.configs if same_config(rec.config, c)), None) if rec else None
        if config is not None:
            tuner.cache[key] = config
        return config

    def _unkeyed(self, tuner: Any, original: Callable[..., Any], args: tuple, kwargs: dict,
                 error: AutotuneKeyError) -> Any:
        """No key: nothing to inject or record under. Tune live; replay marks the row."""
        kid = tuner_kernel_id(tuner)
        if self.mode == REPLAY:
            self._mark("key_unknown", kid)
        result = original(tuner, *args, **kwargs)
        self._note(kid, None, tuner.best_config, "fallback" if self.mode == REPLAY else "tuned",
                   key_error=str(error))
        return result

    def _record(self, tuner: Any, kid: str, key: Any, *, injected: Any = None) -> None:
        extra: dict[str, Any] = {}
        try:
            config = tuner.cache[key]
        except (KeyError, TypeError):
            config = tuner.best_config  # key recipe drift: what this very call launched
            extra["key_found"] = False  # replay will verify; say so here already
        source = "tuned"
        if injected is not None:
            launched = getattr(tuner, "best_config", None)
            if launched is None or same_config(config_to_dict(injected), launched):
                source = "presweep"
            else:  # the tuner looked elsewhere and tuned: record what it launched, say so
                config, extra["presweep_ignored"] = launched, True
        self._note(kid, key, config, source, **extra)
        op, label = self._row_label
        match = (kid, key_text(key))
        old = self._records.get(match)
        cases = tuple(sorted(set(old.cases if old else ()) | {label}))
        self._records[match] = Record(op=old.op if old else op, kernel=kid, tuner=type(tuner).__name__,
                                      key=jsonable(key), config=config_to_dict(config), cases=cases)

    def _replay(self, tuner: Any, original: Callable[..., Any], kid: str, key: Any, args: tuple,
                kwargs: dict) -> tuple[Any, Any]:
        """One call under replay: its result and the config injected (None when it fell back
        to live tuning or the injection did not take)."""
        match = (kid, key_text(key))
        rec = self.replay.lookup(kid, key) if self.replay else None
        config = next((c for c in tuner.configs if same_config(rec.config, c)), None) if rec else None
        reason = ("key_missing" if rec is None else "compile_failed" if match in self._failed
                  else "config_not_in_space" if config is None else "")
        if reason:
            return self._tune_live(reason, tuner, original, kid, key, args, kwargs), None
        tuner.cache[key] = config  # unconditionally: a cached live winner must not win
        watch = self._watch(tuner)
        try:
            result = original(tuner, *args, **kwargs)
        except Exception as exc:  # the injected config no longer compiles/launches
            if is_fatal(exc):
                raise
            self._failed.add(match)
            # live tuning; with no_evict the same bad config is read back and raises again
            reason = "compile_failed" if _evict(tuner.cache, key) else "compile_failed_no_evict"
            return self._tune_live(reason, tuner, original, kid, key, args, kwargs), None
        if not self._verified(tuner, kid, key, config, watch):
            return result, None
        self._note(kid, key, config, "replayed")
        return result, config

    def _watch(self, tuner: Any) -> tuple[int, Any]:
        """What shows a selection ran during the next call: the tuner's benchmark count and
        the ``configs_timings`` object every Triton/LibTuner selection rebinds."""
        return self._benches.get(id(tuner), 0), getattr(tuner, "configs_timings", None)

    def _verified(self, tuner: Any, kid: str | None, key: Any, config: Any, watch: tuple[int, Any]) -> bool:
        """Whether the call just made launched the injected config without a selection; if
        not, mark the row and note what was launched instead."""
        benches = self._benches.get(id(tuner), 0) - watch[0]
        swept = benches > 0 or getattr(tuner, "configs_timings", None) is not watch[1]
        launched = getattr(tuner, "best_config", None)
        # identity first: both tuners launch the very config object they found under the key
        same = launched is config or (launched is not None and same_config(config_to_dict(config), launched))
        if same and not swept:
            return True
        kid = kid or tuner_kernel_id(tuner)
        reason = "swept" if swept else "key_mismatch"
        self._mark(reason, kid)
        extra: dict[str, Any] = {"reason": reason, "injected": config_to_dict(config), "sweep_benchmarks": benches}
        if launched is None:
            extra["launched_unknown"] = True  # a tuner that sets no best_config: noted as injected
        self._note(kid, key, launched if launched is not None else config, "fallback", **extra)
        return False

    def _tune_live(self, reason: str, tuner: Any, original: Callable[..., Any], kid: str, key: Any,
                   args: tuple, kwargs: dict) -> Any:
        """Fall back to the tuner's own choice (a sweep the first time, cached after); mark the row."""
        self._mark(reason, kid)
        result = original(tuner, *args, **kwargs)
        self._note(kid, key, tuner.best_config, "fallback")
        return result


def _tuner_classes() -> list[type]:
    """The classes whose ``run`` is patched: Triton's ``Autotuner`` and FlagGems' ``LibTuner``
    (subclasses inherit the patch unless they override ``run`` without calling it)."""
    from triton.runtime.autotuner import Autotuner

    classes: list[type] = [Autotuner]
    for module in LIBENTRY_MODULES:
        if importlib.util.find_spec(module.split(".")[0]) is None:
            continue
        try:
            mod = importlib.import_module(module)
        except Exception:  # noqa: BLE001 - a broken flag_gems install is not our failure
            continue
        lib = getattr(mod, "LibTuner", None)
        if isinstance(lib, type) and "run" in vars(lib):
            classes.append(lib)
    return classes


def _bench_classes() -> list[type]:
    """``Autotuner`` and every loaded subclass with its own ``_bench`` (FlagGems has tuners
    that benchmark without calling ``Autotuner._bench``): a sweep through any is counted."""
    from triton.runtime.autotuner import Autotuner

    seen: list[type] = []
    todo: list[type] = [Autotuner]
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.append(cls)
            todo.extend(cls.__subclasses__())
    return [cls for cls in seen if "_bench" in vars(cls)]


@contextlib.contextmanager
def autotune_session(session: AutotuneSession) -> Iterator[AutotuneSession]:
    """Patch every tuner class's ``run`` (and count ``_bench`` sweeps) for the block."""
    restores: list[Callable[[], None]] = []
    for cls in _tuner_classes():
        original = vars(cls)["run"]

        def run(self: Any, *args: Any, _original: Callable[..., Any] = original, **kwargs: Any) -> Any:
            return session.call(self, _original, args, kwargs)

        cls.run = run
        restores.append(lambda cls=cls, original=original: setattr(cls, "run", original))
    for cls in _bench_classes():
        original_bench = vars(cls)["_bench"]

        def _bench(self: Any, *args: Any, _original: Callable[..., Any] = original_bench, **kwargs: Any) -> Any:
            return session.benchmark(self, _original, args, kwargs)

        cls._bench = _bench
        restores.append(lambda cls=cls, original=original_bench: setattr(cls, "_bench", original))
    try:
        yield session
    finally:
        for restore in reversed(restores):
            restore()
