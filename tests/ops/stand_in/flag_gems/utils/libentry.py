"""The stand-in's LibTuner and LibEntry.

``LibTuner`` behaves like FlagGems' (``tests/autotune/fake_libtuner.py`` is reused for that: its
own ``run``, ``get_key`` with the ``align32`` strategy, sweeps through ``self._bench``,
``best_config``), and like FlagGems' defines ``run`` in its own class, which is what
tritongate's autotune session patches. ``LibEntry`` is FlagGems' dispatch cache in small: the
tuner runs only on the first call of each argument specialisation.
"""

import importlib.util
from pathlib import Path

try:
    from tests.autotune.fake_libtuner import FakeLibTuner, align32
except ImportError:  # the stand-in on PYTHONPATH without the repository root
    _path = Path(__file__).resolve().parents[4] / "autotune" / "fake_libtuner.py"
    _spec = importlib.util.spec_from_file_location("_stand_in_fake_libtuner", _path)
    _mod = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_mod)
    FakeLibTuner, align32 = _mod.FakeLibTuner, _mod.align32


class LibTuner(FakeLibTuner):
    def run(self, *args, **kwargs):
        return super().run(*args, **kwargs)


def libtuner(configs, key, strategy="align32", warmup=5, rep=10, **_ignored):
    # do_bench None: the backend's benchmarker (tritongate's host timer under the interpreter)
    return lambda fn: LibTuner(fn, configs, key, do_bench=None, strategy=align32)


class LibEntry:
    def __init__(self, fn):
        self.fn = fn
        self.arg_names = fn.arg_names
        self.kernel_cache = {}

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)

    def run(self, *args, grid, warmup=False, **kwargs):
        key = tuple((str(a.dtype), a.data_ptr() % 16 == 0) if hasattr(a, "data_ptr") else (type(a).__name__, a)
                    for a in args)
        config = self.kernel_cache.get(key)
        if config is None:
            result = self.fn.run(*args, grid=grid, warmup=warmup, **kwargs)
            self.kernel_cache[key] = self.fn.best_config
            return result
        return self.fn.fn.run(*args, grid=grid, warmup=warmup, **kwargs, **config.all_kwargs())


def libentry():
    return lambda fn: LibEntry(fn)
