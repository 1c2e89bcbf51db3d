"""The stand-in's LibTuner and LibEntry.

``LibTuner`` behaves like FlagGems' (``tests/autotune/fake_libtuner.py`` is reused for that: its
own ``run``, ``get_key`` with the ``align32`` strategy, sweeps through ``self._bench``,
``best_config``), and like FlagGems' defines ``run`` in its own class, which is what
tritongate's autotune session patches. ``LibEntry`` is FlagGems' dispatch cache in small: the
tuner runs only on the first call of each argument specialisation.
"""

import importlib.util
from pathlib import Path

import triton

from flag_gems import runtime

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
    """Like FlagGems': the first call of an argument specialisation tunes through
    ``self.fn.run``; later calls launch the cached kernel directly, past the JIT's ``run``,
    and every call returns ``(kernel, constexprs)``. Outside the interpreter it is FlagGems'
    in the ways that matter: it walks ``.fn`` down to a ``JITFunction`` (an interpreted kernel
    has none: refused), keeps one cache per device (``torch.cuda.current_device()``) and
    launches a cached kernel as ``kernel[grid](*args)``. Under the interpreter (where the
    real package cannot run) the cached launch goes through the interpreter's own ``run``."""

    def __init__(self, fn):
        self.fn = fn
        self.arg_names = fn.arg_names
        if runtime.INTERPRETED:
            self.jit_function = fn.fn
            self._launch = type(fn.fn).run  # unpatched: what a cached kernel's launch bypasses
            self.kernel_cache = {}
            return
        while not isinstance(fn, triton.runtime.JITFunction):
            fn = fn.fn  # an interpreted kernel's .fn is the Python function: AttributeError, as FlagGems
        self.jit_function = fn
        self.kernel_cache = tuple({} for _ in range(runtime.DEVICE_COUNT))

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)

    def run(self, *args, grid, warmup=False, **kwargs):
        key = tuple((str(a.dtype), a.data_ptr() % 16 == 0) if hasattr(a, "data_ptr") else (type(a).__name__, a)
                    for a in args)
        cache = self.kernel_cache if runtime.INTERPRETED else \
            self.kernel_cache[runtime.torch_device_fn.current_device()]
        cached = cache.get(key)
        if cached is None:
            kernel = self.fn.run(*args, grid=grid, warmup=warmup, **kwargs)
            constexprs = dict(self.fn.best_config.all_kwargs())
            cache[key] = (kernel, constexprs)
            return kernel, constexprs
        kernel, constexprs = cached
        if runtime.INTERPRETED:
            self._launch(self.jit_function, *args, grid=grid, warmup=warmup, **kwargs, **constexprs)
        else:
            meta = {**dict(zip(self.arg_names, args)), **kwargs, **constexprs}
            tail = [constexprs[p] for p in self.jit_function.arg_names[len(args):] if p in constexprs]
            kernel[grid(meta) if callable(grid) else grid](*args, *tail)
        return kernel, constexprs


def libentry():
    return lambda fn: LibEntry(fn)
