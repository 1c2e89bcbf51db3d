"""What tritongate knows about each FlagGems op it can measure: the family ("class") that
decides the shape layout and the shape file's fallback key, the arguments to make from a
shape, the torch op that is the reference, and the bytes/FLOPs of one launch.

Plain data, no torch: suites read it on any machine; ``flaggems.py`` makes ``OpSpec``s of it.
Family names follow FlagGems' benchmark classes where the layout matches theirs (e.g.
``BlasBenchmark`` = [B, M, N, K], ``NormBenchmark`` = [N, C, *]), so an upstream
``core_shapes.yaml`` class key means the same here; the others are tritongate's own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

Shape = tuple[int, ...]

FLOAT = ("float32", "float16", "bfloat16")
HALF = ("float16", "bfloat16")
INT = ("int32", "int16")


numel = math.prod


# -- arguments made from a row's shape ------------------------------------------------------------

@dataclass(frozen=True)
class T:
    """A tensor argument."""

    shape: Callable[[Shape], Shape] = lambda s: s  # the row's shape -> this tensor's
    domain: str = "real"  # which values (flaggems._tensor)
    dtype: str | None = None  # a torch dtype name; None: the row's dtype
    high: Callable[[Shape], int] | None = None  # index tensors: values in [0, high(shape))


@dataclass(frozen=True)
class Seq:
    items: tuple[T, ...]  # a list of tensor arguments (cat, stack)


@dataclass(frozen=True)
class S:
    fn: Callable[[Shape], Any]  # a value computed from the shape (a dim list, a count) or a constant


def const(value: Any) -> S:
    return S(lambda s, _v=value: _v)


ROW_DTYPE = "row_dtype"  # a keyword argument that is the row's torch dtype (creation ops)
ROW_DEVICE = "row_device"  # ... the row's device


@dataclass(frozen=True)
class Family:
    name: str  # the inventory's class column and the shape file's fallback key
    shape_doc: str
    ranks: tuple[int, ...]
    default_shapes: tuple[Shape, ...]  # the last resort of the shape fallback chain
    bytes: Callable[[Shape, int], float]  # 0.0: not counted (no TB/s shown)
    flops: Callable[[Shape], float] | None = None
    dtypes: tuple[str, ...] = FLOAT
    tolerance: dict[str, tuple[float, float]] = field(default_factory=dict)


@dataclass(frozen=True)
class Recipe:
    op: str  # the name in flag_gems (flag_gems.<op>), suites and shape files
    family: Family
    args: tuple[Any, ...]  # T, Seq, S, ROW_DTYPE/ROW_DEVICE or plain constants
    ref: str  # "torch.<path>" or the name of a reference function in flaggems.py
    kwargs: dict[str, Any] = field(default_factory=dict)
    out: int | None = None  # which element of a tuple result flag_gems returns is compared
    ref_out: int | None = None  # ... and of the reference's
    dtypes: tuple[str, ...] | None = None  # None: the family's
    tolerance: dict[str, tuple[float, float]] = field(default_factory=dict)
    min_dims: Callable[[Shape], str | None] | None = None  # why a shape does not fit, or None
    ref_upcast: bool = False  # the torch op lacks low-precision kernels: reference on float32 copies
    note: str = ""

    @property
    def all_dtypes(self) -> tuple[str, ...]:
        return self.dtypes or self.family.dtypes

    def tolerances(self) -> dict[str, tuple[float, float]]:
        return {**self.family.tolerance, **self.tolerance}


# -- families --------------------------------------------------------------------------------------

def _per_elem(k: float) -> Callable[[Shape, int], float]:
    return lambda s, e: k * numel(s) * e


UNARY = Family("UnaryPointwiseBenchmark", "[*] any layout (1-4 dims)", (1, 2, 3, 4),
               ((1048576,), (4096, 4096)), bytes=_per_elem(2), flops=numel)
BINARY = Family("BinaryPointwiseBenchmark", "[*] any layout (1-4 dims), both operands", (1, 2, 3, 4),
                ((1048576,), (4096, 4096)), bytes=_per_elem(3), flops=numel)
TERNARY = Family("TernaryPointwiseBenchmark", "[*] any layout (1-4 dims), three operands", (1, 2, 3, 4),
                 ((1048576,), (4096, 4096)), bytes=_per_elem(4), flops=lambda s: 2 * numel(s))
# Reductions accumulate: their error grows with the reduced length, hence the wider float32 band.
_REDUCE_TOL = {"float32": (1e-3, 1e-3), "float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2)}
_MM_TOL = {"float32": (2e-2, 1e-2), "float16": (2e-2, 1e-2), "bfloat16": (6e-2, 2e-2)}
REDUCE = Family("UnaryReductionBenchmark", "[*] reduced to one value (1-3 dims)", (1, 2, 3),
                ((1048576,), (4096, 4096)), bytes=_per_elem(1), flops=numel, tolerance=_REDUCE_TOL)
REDUCE_DIM = Family("DimReductionBenchmark", "[rows, cols] or [batch, rows, cols], over the last dim",
                    (2, 3), ((1024, 1024), (4096, 4096)),
                    bytes=lambda s, e: (numel(s) + numel(s[:-1])) * e, flops=numel, tolerance=_REDUCE_TOL)
SCAN = Family("ScanBenchmark", "[rows, cols] or [batch, rows, cols], along the last dim", (2, 3),
              ((1024, 1024), (4096, 4096)), bytes=_per_elem(2), flops=numel,
              tolerance={"float32": (1e-3, 1e-3), "float16": (5e-2, 2e-2), "bfloat16": (2e-1, 5e-2)})
SOFTMAX = Family("SoftmaxBenchmark", "[rows, cols] or [batch, rows, cols], over the last dim", (2, 3),
                 ((1024, 1024), (4096, 4096)), bytes=_per_elem(2), flops=lambda s: 5 * numel(s))
ROW_NORM = Family("LayerNormBenchmark", "[rows, hidden], normalized over hidden", (2, 3),
                  ((1024, 1024), (4096, 4096)), bytes=lambda s, e: (2 * numel(s) + 2 * s[-1]) * e,
                  flops=lambda s: 8 * numel(s))
CHANNEL_NORM = Family("NormBenchmark", "[N, C, *] (3 or 4 dims)", (3, 4),
                      ((16, 16, 128), (20, 6, 65536)), bytes=lambda s, e: (2 * numel(s) + 2 * s[1]) * e,
                      flops=lambda s: 8 * numel(s))
MATMUL = Family("MatmulBenchmark", "[M, N, K]", (3,), ((16, 4096, 4096), (4096, 4096, 4096)),
                bytes=lambda s, e: (s[0] * s[2] + s[2] * s[1] + s[0] * s[1]) * e,
                flops=lambda s: 2.0 * s[0] * s[1] * s[2], tolerance=_MM_TOL)
BATCHED = Family("BlasBenchmark", "[B, M, N, K]", (4,), ((16, 1024, 1024, 1024),),
                 bytes=lambda s, e: s[0] * (s[1] * s[3] + s[3] * s[2] + s[1] * s[2]) * e,
                 flops=lambda s: 2.0 * s[0] * s[1] * s[2] * s[3], tolerance=_MM_TOL)
MATVEC = Family("MvAndOuterBenchmark", "[M, N]", (2,), ((4096, 4096),),
                bytes=lambda s, e: (s[0] * s[1] + s[0] + s[1]) * e, flops=lambda s: 2.0 * s[0] * s[1],
                tolerance={"float32": (1e-3, 1e-3), "float16": (2e-2, 1e-2), "bfloat16": (6e-2, 2e-2)})
DOT = Family("DotBenchmark", "[N]", (1,), ((1048576,),), bytes=_per_elem(2), flops=lambda s: 2.0 * s[0],
             tolerance={"float32": (1e-3, 1e-3), "float16": (2e-2, 2e-2), "bfloat16": (6e-2, 4e-2)})
ATTENTION = Family("AttentionBenchmark", "[batch, heads, seq, head_dim]", (4,), ((4, 32, 1024, 128),),
                   bytes=_per_elem(4), flops=lambda s: 4.0 * s[0] * s[1] * s[2] * s[2] * s[3], dtypes=HALF,
                   tolerance={"float16": (2e-2, 2e-2), "bfloat16": (4e-2, 4e-2)})
GLU = Family("GluBenchmark", "[rows, cols] (cols even: halves are gate and value)", (2, 3),
             ((4096, 4096),), bytes=lambda s, e: 1.5 * numel(s) * e, flops=lambda s: 2 * numel(s))
CONCAT = Family("ConcatBenchmark", "[*] each of the three operands (1-3 dims)", (1, 2, 3),
                ((1024, 1024),), bytes=_per_elem(6))
SELECT = Family("TensorSelectBenchmark", "[rows, cols]", (2,), ((1024, 1024), (4096, 4096)),
                bytes=_per_elem(2))
EMBEDDING = Family("EmbeddingLookupBenchmark", "[tokens, vocab, hidden]", (3,), ((4096, 32000, 4096),),
                   bytes=lambda s, e: 2 * s[0] * s[2] * e)
CREATION = Family("CreationBenchmark", "[*] the created tensor (1-4 dims)", (1, 2, 3, 4),
                  ((1048576,), (4096, 4096)), bytes=_per_elem(1))
LOSS = Family("CrossEntropyBenchmark", "[rows, classes]", (2,), ((4096, 32000),),
              bytes=lambda s, e: numel(s) * e, flops=lambda s: 4 * numel(s), tolerance=_REDUCE_TOL)

FAMILIES: dict[str, Family] = {f.name: f for f in (
    UNARY, BINARY, TERNARY, REDUCE, REDUCE_DIM, SCAN, SOFTMAX, ROW_NORM, CHANNEL_NORM, MATMUL, BATCHED,
    MATVEC, DOT, ATTENTION, GLU, CONCAT, SELECT, EMBEDDING, CREATION, LOSS)}


# -- argument helpers --------------------------------------------------------------------------------

X = T()
LAST = const(-1)
LAST_LIST = const([-1])


def _even_last(s: Shape) -> str | None:
    return None if s[-1] % 2 == 0 else f"the last dim must be even (gate and value halves), got {s[-1]}"


def _cols_at_least(k: int) -> Callable[[Shape], str | None]:
    return lambda s: None if s[-1] >= k else f"the last dim must be at least {k}, got {s[-1]}"


# -- the table -----------------------------------------------------------------------------------------

RECIPES: dict[str, Recipe] = {}


def _add(recipe: Recipe) -> None:
    if recipe.op in RECIPES:
        raise ValueError(f"recipe {recipe.op!r} twice")
    RECIPES[recipe.op] = recipe


def unary(op: str, ref: str | None = None, *extra: Any, domain: str = "real", **kw: Any) -> None:
    _add(Recipe(op, UNARY, (T(domain=domain), *map(const, extra)), ref or f"torch.{op}", **kw))


def binary(op: str, ref: str | None = None, *extra: Any, x: str = "real", y: str = "real", **kw: Any) -> None:
    _add(Recipe(op, BINARY, (T(domain=x), T(domain=y), *map(const, extra)), ref or f"torch.{op}", **kw))


for _op in ("abs", "neg", "exp", "exp2", "expm1", "sin", "cos", "tanh", "sigmoid", "relu", "erf", "atan",
            "cosh", "arcsinh", "square", "ceil", "round", "isnan", "isinf", "isfinite", "signbit",
            "logical_not", "nan_to_num"):
    unary(_op)
unary("angle", ref_upcast=True)  # torch has no float16 angle on CUDA ("angle_cuda" not implemented for 'Half')
for _op in ("silu", "gelu", "relu6", "elu", "celu", "selu", "softplus", "hardsigmoid"):
    unary(_op, f"torch.nn.functional.{_op}")
unary("log_sigmoid", "torch.nn.functional.logsigmoid")
unary("tan", domain="unit")
unary("acos", domain="unit")
for _op in ("log", "log10", "sqrt", "rsqrt"):
    unary(_op, domain="positive")
unary("reciprocal", domain="nonzero")
unary("logit", domain="prob")
unary("i0", domain="unit")
unary("special_i0e", "torch.special.i0e")
unary("special_i1", "torch.special.i1", domain="unit")
unary("softshrink", "torch.nn.functional.softshrink", 0.5)
unary("clamp", "torch.clamp", -0.5, 0.5)
unary("clamp_min", "torch.clamp_min", 0.0)
unary("clip", "torch.clip", -0.5, 0.5)
unary("threshold", "torch.nn.functional.threshold", 0.1, 0.0)
unary("pow_tensor_scalar", "torch.pow", 3.0)
unary("bitwise_not", domain="int", dtypes=INT)

for _op in ("add", "sub", "mul", "maximum", "minimum", "fmin", "eq", "ne", "gt", "ge", "lt", "le", "greater",
            "atan2", "hypot", "logaddexp", "copysign", "isclose"):
    binary(_op)
for _op in ("true_divide", "remainder", "floor_divide"):
    binary(_op, y="nonzero")
binary("pow_tensor_tensor", "torch.pow", x="positive", y="unit")
for _op in ("logical_and", "logical_or", "logical_xor"):
    binary(_op, x="sparse", y="sparse")
binary("bitwise_and_tensor", "torch.bitwise_and", x="int", y="int", dtypes=INT)
binary("bitwise_or_tensor", "torch.bitwise_or", x="int", y="int", dtypes=INT)
binary("lerp_scalar", "torch.lerp", 0.3)
binary("silu_and_mul", "silu_and_mul")
binary("gelu_and_mul", "gelu_and_mul")
_add(Recipe("mse_loss", BINARY, (X, X), "torch.nn.functional.mse_loss", tolerance=_REDUCE_TOL))
_add(Recipe("soft_margin_loss", BINARY, (X, T(domain="sign")), "torch.nn.functional.soft_margin_loss",
            tolerance=_REDUCE_TOL))

_add(Recipe("where_self", TERNARY, (T(domain="bool", dtype="bool"), X, X), "torch.where"))
_add(Recipe("addcmul", TERNARY, (X, X, X), "torch.addcmul", kwargs={"value": 0.5}))
_add(Recipe("addcdiv", TERNARY, (X, X, T(domain="nonzero")), "torch.addcdiv", kwargs={"value": 0.5}))
_add(Recipe("lerp_tensor", TERNARY, (X, X, T(domain="prob")), "torch.lerp"))
_add(Recipe("clamp_tensor", TERNARY, (X, T(domain="low"), T(domain="high")), "torch.clamp"))
_add(Recipe("masked_fill", TERNARY, (X, T(domain="bool", dtype="bool"), const(0.5)), "torch.masked_fill"))

for _op in ("sum", "mean", "max", "min"):
    _add(Recipe(_op, REDUCE, (X,), f"torch.{_op}"))
for _op in ("all", "any", "count_nonzero"):
    _add(Recipe(_op, REDUCE, (T(domain="sparse"),), f"torch.{_op}"))

for _op, _ref in (("sum_dim", "sum"), ("mean_dim", "mean"), ("amax", "amax")):
    _add(Recipe(_op, REDUCE_DIM, (X, LAST_LIST), f"torch.{_ref}"))
for _op, _ref in (("max_dim", "max"), ("min_dim", "min")):
    _add(Recipe(_op, REDUCE_DIM, (X, LAST), f"torch.{_ref}", out=0, ref_out=0))
_add(Recipe("argmax", REDUCE_DIM, (X, LAST), "torch.argmax"))
_add(Recipe("argmin", REDUCE_DIM, (X, LAST), "torch.argmin"))
_add(Recipe("prod_dim", REDUCE_DIM, (T(domain="near_one"), LAST), "torch.prod"))
for _op in ("all", "any"):
    _add(Recipe(f"{_op}_dim", REDUCE_DIM, (T(domain="sparse"), LAST), f"torch.{_op}"))
_add(Recipe("var_mean", REDUCE_DIM, (X, LAST_LIST), "torch.var_mean", out=0, ref_out=0))
_add(Recipe("std", REDUCE_DIM, (X, LAST_LIST), "torch.std"))
_add(Recipe("var_dim", REDUCE_DIM, (X, LAST_LIST), "torch.var"))
_add(Recipe("vector_norm", REDUCE_DIM, (X, const(2), LAST_LIST), "torch.linalg.vector_norm"))
_add(Recipe("topk", REDUCE_DIM, (X, const(8), LAST), "torch.topk", out=0, ref_out=0,
            min_dims=_cols_at_least(8)))
_add(Recipe("sort", SCAN, (X, LAST), "torch.sort", out=0, ref_out=0))
# Positive inputs: prefix sums grow without crossing zero, so the relative check stays
# meaningful. The reference runs on float32 copies: torch's own float16/bfloat16 cumsum drifts
# from the exact prefix sum by up to 1.5 % / 20 % over 4096 elements (measured on the H200:
# bench/results/2026-11-30_h200_scan_accuracy.txt), while flag_gems stays within one rounding
# of the output dtype (4.9e-4 / 3.9e-3). The bands are FlagGems' own (its dtype resolution).
_add(Recipe("cumsum", SCAN, (T(domain="small_positive"), LAST), "torch.cumsum", ref_upcast=True,
            tolerance={"float32": (1e-4, 1e-5), "float16": (1e-3, 2e-3), "bfloat16": (1e-2, 1.6e-2)}))
_add(Recipe("cummax", SCAN, (X, LAST), "torch.cummax", out=0, ref_out=0))
_add(Recipe("cummin", SCAN, (X, LAST), "torch.cummin", out=0, ref_out=0))

_add(Recipe("softmax", SOFTMAX, (T(domain="wide"), LAST), "torch.softmax"))
_add(Recipe("log_softmax", SOFTMAX, (T(domain="wide"), LAST), "torch.log_softmax"))

_HIDDEN = S(lambda s: [s[-1]])
_WEIGHT = T(shape=lambda s: s[-1:])
_add(Recipe("layer_norm", ROW_NORM, (X, _HIDDEN, _WEIGHT, _WEIGHT, const(1e-5)),
            "torch.nn.functional.layer_norm", out=0))
_add(Recipe("rms_norm", ROW_NORM, (X, _HIDDEN, _WEIGHT, const(1e-5)), "torch.nn.functional.rms_norm"))
_add(Recipe("skip_layer_norm", ROW_NORM, (X, X, _HIDDEN, _WEIGHT, _WEIGHT, const(1e-5)), "skip_layer_norm"))
_CHANNELS = T(shape=lambda s: (s[1],))
_add(Recipe("group_norm", CHANNEL_NORM,
            (X, _CHANNELS, _CHANNELS, S(lambda s: s[0]), S(lambda s: s[1]), S(lambda s: numel(s[2:])),
             S(lambda s: max(1, s[1] // 2)), const(1e-5)), "group_norm", out=0,
            min_dims=lambda s: None if s[1] % max(1, s[1] // 2) == 0 else f"C={s[1]} is not divisible by C//2"))
# flag_gems' half-precision batch_norm was seen 10 ulps off torch on one element of 4M (H200).
_add(Recipe("batch_norm", CHANNEL_NORM, (X, _CHANNELS, _CHANNELS), "batch_norm", out=0,
            kwargs={"training": True, "momentum": 0.1, "eps": 1e-5},
            tolerance={"float16": (5e-2, 2e-2), "bfloat16": (1e-1, 4e-2)}))

_MK = T(shape=lambda s: (s[0], s[2]), domain="scaled:2")
_KN = T(shape=lambda s: (s[2], s[1]), domain="scaled:2")
_add(Recipe("mm", MATMUL, (_MK, _KN), "torch.mm"))
_add(Recipe("addmm", MATMUL, (T(shape=lambda s: (s[1],)), _MK, _KN), "torch.addmm"))
_BMK = T(shape=lambda s: (s[0], s[1], s[3]), domain="scaled:3")
_BKN = T(shape=lambda s: (s[0], s[3], s[2]), domain="scaled:3")
_add(Recipe("bmm", BATCHED, (_BMK, _BKN), "torch.bmm"))
_add(Recipe("baddbmm", BATCHED, (T(shape=lambda s: (s[0], s[1], s[2])), _BMK, _BKN), "torch.baddbmm"))
_MAT = T(shape=lambda s: s, domain="scaled:1")
_VEC_N = T(shape=lambda s: (s[1],), domain="scaled:1")
_add(Recipe("mv", MATVEC, (_MAT, _VEC_N), "torch.mv"))
_add(Recipe("addmv", MATVEC, (T(shape=lambda s: (s[0],)), _MAT, _VEC_N), "torch.addmv"))
_add(Recipe("addr", MATVEC, (X, T(shape=lambda s: (s[0],)), T(shape=lambda s: (s[1],))), "torch.addr",
            note="[M, N] += outer(v1[M], v2[N])"))
_add(Recipe("outer", MATVEC, (T(shape=lambda s: (s[0],)), T(shape=lambda s: (s[1],))), "torch.outer"))
_add(Recipe("dot", DOT, (T(domain="scaled:0"), T(domain="scaled:0")), "torch.dot"))
_add(Recipe("vdot", DOT, (T(domain="scaled:0"), T(domain="scaled:0")), "torch.vdot"))

_add(Recipe("scaled_dot_product_attention", ATTENTION, (X, X, X),
            "torch.nn.functional.scaled_dot_product_attention"))

_add(Recipe("glu", GLU, (X, LAST), "torch.nn.functional.glu", min_dims=_even_last))
_add(Recipe("swiglu", GLU, (X,), "swiglu", min_dims=_even_last))
_add(Recipe("geglu", GLU, (X,), "geglu", min_dims=_even_last))
_add(Recipe("reglu", GLU, (X,), "reglu", min_dims=_even_last))

for _op in ("cat", "stack"):
    _add(Recipe(_op, CONCAT, (Seq((X, X, X)), const(0)), f"torch.{_op}"))
for _op in ("hstack", "vstack"):
    _add(Recipe(_op, CONCAT, (Seq((X, X, X)),), f"torch.{_op}"))

_add(Recipe("tril", SELECT, (X,), "torch.tril"))
_add(Recipe("triu", SELECT, (X,), "torch.triu"))
_add(Recipe("flip", SELECT, (X, LAST_LIST), "torch.flip"))
_add(Recipe("roll", SELECT, (X, const(1), LAST), "torch.roll"))
_add(Recipe("repeat", SELECT, (X, const([2, 1])), "repeat"))
_add(Recipe("tile", SELECT, (X, const([2, 1])), "torch.tile"))
_add(Recipe("index_select", SELECT,
            (X, const(0), T(shape=lambda s: (max(1, s[0] // 2),), dtype="int64", domain="index",
                            high=lambda s: s[0])), "torch.index_select"))
_add(Recipe("gather", SELECT, (X, const(1), T(dtype="int64", domain="index", high=lambda s: s[1])),
            "torch.gather"))
_add(Recipe("diag", SELECT, (X,), "torch.diag"))
_add(Recipe("trace", SELECT, (X,), "torch.trace", tolerance=_REDUCE_TOL))
_add(Recipe("constant_pad_nd", SELECT, (X, const([1, 1])), "torch.constant_pad_nd"))

_add(Recipe("embedding", EMBEDDING,
            (T(shape=lambda s: (s[1], s[2])), T(shape=lambda s: (s[0],), dtype="int64", domain="index",
                                                high=lambda s: s[1])), "embedding"))

for _op in ("zeros", "ones"):
    _add(Recipe(_op, CREATION, (S(lambda s: list(s)),), f"torch.{_op}",
                kwargs={"dtype": ROW_DTYPE, "device": ROW_DEVICE}))
_add(Recipe("full", CREATION, (S(lambda s: list(s)), const(1.5)), "torch.full",
            kwargs={"dtype": ROW_DTYPE, "device": ROW_DEVICE}))
for _op in ("zeros_like", "ones_like"):
    _add(Recipe(_op, CREATION, (X,), f"torch.{_op}"))
_add(Recipe("full_like", CREATION, (X, const(1.5)), "torch.full_like"))
_add(Recipe("fill_scalar", CREATION, (X, const(1.5)), "torch.full_like"))

_add(Recipe("cross_entropy_loss", LOSS,
            (X, T(shape=lambda s: (s[0],), dtype="int64", domain="index", high=lambda s: s[1])),
            "torch.nn.functional.cross_entropy"))


def recipe(op: str) -> Recipe | None:
    return RECIPES.get(op)


def shape_problem(rec: Recipe, shape: Shape) -> str | None:
    """Why ``shape`` does not fit the op, beyond its rank, or None."""
    if len(shape) not in rec.family.ranks:
        return None  # the rank check is the OpSpec's
    return rec.min_dims(shape) if rec.min_dims else None
