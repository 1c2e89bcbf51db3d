import hashlib
import sys
import types
from types import SimpleNamespace

from tritongate.ir.variants import LaunchRecorder, record_launches, variant_name


def compiled(cache_key: str, cubin: bytes):
    src = SimpleNamespace(hash=lambda: "srchash")
    return SimpleNamespace(hash=cache_key, kernel=cubin, src=src,
                           metadata=SimpleNamespace(num_warps=4, num_stages=3))


def fn():
    pass


def test_binary_identity_comes_from_the_bytes_not_the_cache_key():
    a, b, c = LaunchRecorder(), LaunchRecorder(), LaunchRecorder()
    a.record(fn, {"BLOCK": 1024}, compiled("key-of-build-A", b"\x7fELF same code"))
    b.record(fn, {"BLOCK": 1024}, compiled("key-of-build-B", b"\x7fELF same code"))
    c.record(fn, {"BLOCK": 1024}, compiled("key-of-build-B", b"\x7fELF other code"))
    (va,), (vb,), (vc,) = a.variants(), b.variants(), c.variants()
    assert va.binary_hash == vb.binary_hash != vc.binary_hash
    assert va.source_hash == "srchash" and va.name == "BLOCK=1024 w4 s3"


def test_variant_names():
    assert variant_name({"BLOCK_M": 64, "num_warps": 4, "num_stages": 3, "debug": False}) == "BLOCK_M=64 s3 w4"
    assert variant_name({}) == "default"


def test_a_libentry_cache_hit_is_recorded_once_with_its_binary(monkeypatch):
    """FlagGems' LibEntry compiles through the JIT once, then launches its cached kernel
    directly: every call is one recorded launch of the same binary."""
    from triton.runtime.jit import JITFunction

    kernel = compiled("cache-key", b"\x7fELF cached")
    monkeypatch.setattr(JITFunction, "run", lambda self, *a, grid=None, warmup=False, **kw: kernel)
    jit_calls = []

    class LibEntry:
        def __init__(self):
            self.jit_function = SimpleNamespace(fn=fn)
            self.cache = None

        def run(self, *args, **kwargs):
            if self.cache is None:
                jit_calls.append(args)
                launched = JITFunction.run(self.jit_function, *args, grid=(1,), BLOCK=64, num_warps=4, num_stages=3)
                self.cache = (launched, {"BLOCK": 64, "num_warps": 4, "num_stages": 3})
            return self.cache

    original = LibEntry.run
    module = types.ModuleType("flag_gems.utils.libentry")
    module.LibEntry = LibEntry
    monkeypatch.setitem(sys.modules, "flag_gems.utils.libentry", module)
    entry = LibEntry()
    with record_launches() as recorder:
        for _ in range(3):
            entry.run(7)
    (variant,) = recorder.variants()
    assert len(jit_calls) == 1 and variant.launches == 3 and variant.name == "BLOCK=64 s3 w4"
    assert variant.binary_hash == hashlib.sha256(b"\x7fELF cached").hexdigest()[:16]
    assert recorder.compiled_launches == {"cache-key": 3}
    assert LibEntry.run is original  # unpatched after the block


def test_a_libentry_module_that_is_not_imported_is_left_alone(monkeypatch):
    monkeypatch.delitem(sys.modules, "flag_gems.utils.libentry", raising=False)
    with record_launches() as recorder:
        pass
    assert "flag_gems.utils.libentry" not in sys.modules and recorder.variants() == ()
