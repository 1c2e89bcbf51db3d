from types import SimpleNamespace

from tritongate.variants import LaunchRecorder, variant_name


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
