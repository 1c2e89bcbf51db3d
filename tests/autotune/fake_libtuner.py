"""A small stand-in for FlagGems' ``LibTuner`` (``flag_gems/utils/libentry.py``), for tests.

What matters to record/replay is copied in behaviour, not in code:

- ``run`` names the arguments as LibTuner does (positional arguments zipped with
  ``arg_names``, keyword arguments merged over them, filtered to ``arg_names``) and passes
  that dict to ``self.get_key``;
- ``get_key`` normalises every key argument with a strategy (``align32``: below 32 the next
  power of two, else the next multiple of 32) and appends the dtype of every tensor;
- a key missing from ``self.cache`` is swept (``self._bench`` per config, through the
  policy's ``bench`` callable), the winner cached under that key; ``best_config`` is what runs.

``KeyedByDataPtrTuner`` overrides ``get_key(self, args)`` with ``args[name]`` lookups, as
FlagGems' addmm tuner does (an alignment bit of a tensor's ``data_ptr``).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch
from triton.runtime.autotuner import Autotuner


def align32(value: int) -> int:
    if value == 0:
        return 0
    if value < 32:
        return 2 ** math.ceil(math.log2(value))
    return math.ceil(value / 32) * 32


class FakeLibTuner(Autotuner):
    def __init__(self, fn: Any, configs: list, key: list[str], do_bench: Callable[..., Any],
                 strategy: Callable[[Any], Any] = align32) -> None:
        super().__init__(fn, fn.arg_names, configs, key, reset_to_zero=None, restore_value=None,
                         do_bench=do_bench)
        self.strategy = [strategy] * len(key)

    def get_key(self, args: dict[str, Any]) -> tuple:
        key = tuple(s(args[k]) for s, k in zip(self.strategy, self.keys))
        return key + tuple(str(v.dtype) for v in args.values() if isinstance(v, torch.Tensor))

    def policy(self, bench: Callable[[Any], Any], configs: list) -> tuple[Any, dict]:
        timings = {c: bench(c) for c in configs}
        return min(timings, key=timings.get), timings

    def run(self, *args: Any, **kwargs: Any) -> Any:
        self.nargs = dict(zip(self.arg_names, args))
        all_args = {**self.nargs, **kwargs}
        named = {k: v for k, v in all_args.items() if k in self.arg_names}
        key = self.get_key(named)
        if key not in self.cache:
            def bench(config: Any) -> Any:
                return self._bench(*args, config=config, **kwargs)

            best, self.configs_timings = self.policy(bench, self.prune_configs(kwargs))
            self.cache[key] = best
        config = self.best_config = self.cache[key]
        if config.pre_hook is not None:
            config.pre_hook({**self.nargs, **kwargs, **config.all_kwargs()})
        ret = self.fn.run(*args, **kwargs, **config.all_kwargs())
        self.nargs = None
        return ret


class KeyedByDataPtrTuner(FakeLibTuner):
    """A subclass keyed on ``args[name]`` lookups, like FlagGems' ``_AddmmTuner``."""

    def get_key(self, args: dict[str, Any]) -> tuple:
        return super().get_key(args) + (args["x_ptr"].data_ptr() % 16 == 0,)


class NargsKeyedTuner(FakeLibTuner):
    """Keys on state its own ``run`` sets up first (``self.nargs``): asked from outside
    ``run``, its ``get_key`` raises."""

    def get_key(self, args: dict[str, Any]) -> tuple:
        return (align32(self.nargs["M"]),) + super().get_key(args)[1:]


def libtuner(configs: list, key: list[str], do_bench: Callable[..., Any],
             cls: type = FakeLibTuner) -> Callable[[Any], Any]:
    """Decorator like FlagGems' ``libtuner``."""
    return lambda fn: cls(fn, configs, key, do_bench)


class OwnBenchTuner(FakeLibTuner):
    """Benchmarks through its own ``_bench``, never ``Autotuner._bench`` (FlagGems' baddbmm
    tuner does so)."""

    def _bench(self, *args: Any, config: Any, **meta: Any) -> Any:
        options = {**meta, **config.all_kwargs()}
        return self.do_bench(lambda: self.fn.run(*args, **options), quantiles=(0.5, 0.2, 0.8))


class SuperBenchTuner(FakeLibTuner):
    """Wraps ``Autotuner._bench`` in its own: one benchmark, two patched layers."""

    def _bench(self, *args: Any, config: Any, **meta: Any) -> Any:
        return super()._bench(*args, config=config, **meta)
