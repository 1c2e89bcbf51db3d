"""Gate policy: thresholds and what fails. Per-op minimum effects live in ``ops/gate.yaml``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping


from tritongate.errors import UsageError
from tritongate.validation import validate


@dataclass(frozen=True)
class GatePolicy:
    min_effect: float = 0.01  # |candidate/base - 1| below this is never a change
    op_min_effect: Mapping[str, float] = field(default_factory=dict)
    # The effect must also clear the row's noise floor: the standard error of the log ratio
    # (from rounds, not samples: each round has its own placement) times Student's t for the
    # row's degrees of freedom at the two-sided tail of noise_z normal SDs (4: p = 6.3e-5).
    noise_z: float = 4.0
    min_samples: int = 10
    strict: bool = False  # rejected / not-comparable rows fail the gate too
    max_missing: int = 0  # rows of the base missing from the candidate before the gate fails
    # The SD of the persistent offset between two worker processes of one build, as a relative
    # effect: the least between-worker-pair component of a paired row's standard error (one
    # worker pair cannot measure its own offset) and each run's part of an unpaired one. The
    # 16 series of bench/results/2026-11-30_h200_shared_inputs.json: SD 0.24 % between worker
    # pairs beyond their own noise, RMS 0.36 %.
    process_sd: float = 0.003
    # How much more the mean of one worker pair's pairs varies than their spread says (serial
    # correlation within a process): the same 16 series, windows of 10 and 20 pairs: median
    # 2.0 and 2.3, up to 6.9.
    pair_inflation: float = 2.5
    fail_on_blind: bool = False  # a gate that could not resolve every timed row fails (⚠️ -> ❌)

    def __post_init__(self) -> None:
        def number(name: str, value: Any, low: float, *, above: bool = False) -> None:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value < low or (above and value == low):
                raise UsageError(f"gate policy: {name} must be a finite number {'>' if above else '>='} {low:g}, "
                                 f"got {value!r} (from --{name.replace('_', '-')} or the policy file)")

        # a minimum effect of 0 is a precision no run reaches: every row would run to its cap
        number("min_effect", self.min_effect, 0, above=True)
        for op, value in self.op_min_effect.items():
            number(f"ops.{op}.min_effect", value, 0, above=True)
        number("noise_z", self.noise_z, 0)
        number("process_sd", self.process_sd, 0)
        number("pair_inflation", self.pair_inflation, 1)
        for name, value, low in (("min_samples", self.min_samples, 1), ("max_missing", self.max_missing, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise UsageError(f"gate policy: {name} must be an integer >= {low}, got {value!r} "
                                 f"(from --{name.replace('_', '-')} or the policy file)")

    def min_effect_for(self, op: str) -> float:
        return self.op_min_effect.get(op, self.min_effect)

    def to_dict(self) -> dict[str, Any]:
        return {"min_effect": self.min_effect, "op_min_effect": dict(self.op_min_effect),
                "noise_z": self.noise_z, "min_samples": self.min_samples, "strict": self.strict,
                "max_missing": self.max_missing, "process_sd": self.process_sd,
                "pair_inflation": self.pair_inflation, "fail_on_blind": self.fail_on_blind}


def default_policy_file() -> Path:
    from tritongate.suites import ops_dir  # with yaml: what reading a policy needs, not importing the gate

    return ops_dir() / "gate.yaml"


def load_policy(path: Path | None = None, **overrides: Any) -> GatePolicy:
    """Read thresholds from a YAML file (default ``ops/gate.yaml`` if present); keyword
    overrides (from the command line) win."""
    import yaml

    from tritongate.validation.inputfiles import PolicyDoc
    from tritongate.yamlsafe import YamlLimitError, describe_yaml_error, load_bounded

    path = Path(path) if path is not None else default_policy_file()
    data: dict[str, Any] = {}
    if path.is_dir():
        raise UsageError(f"policy file {path} is a directory; pass a YAML file such as ops/gate.yaml")
    if path.is_file():
        try:
            raw = load_bounded(path.read_bytes())
        except YamlLimitError as exc:
            raise UsageError(f"{path} is refused: {exc}") from exc
        except yaml.YAMLError as exc:
            raise UsageError(f"{path} is {describe_yaml_error(exc)}") from exc
        if raw is not None and not isinstance(raw, dict):
            raise UsageError(f"{path}: expected a mapping with min_effect / noise_z / min_samples / "
                             f"max_missing / ops, got {type(raw).__name__}")
        doc = validate(PolicyDoc, raw or {}, source=path, error=lambda m: UsageError(
            f"{m} (a policy holds min_effect, noise_z, min_samples, max_missing, strict, and ops "
            "mapping op names to {min_effect: 0.02}; see ops/gate.yaml)"))
        data = {k: v for k, v in doc.model_dump(exclude={"ops"}).items() if v is not None}
        data["op_min_effect"] = {op: entry.min_effect for op, entry in (doc.ops or {}).items()
                                 if entry.min_effect is not None}
    elif path != default_policy_file():
        raise UsageError(f"policy file {path} does not exist; pass a thresholds YAML (the shipped one is "
                         f"{default_policy_file()}), or leave --policy out to use it")
    data.update({k: v for k, v in overrides.items() if v is not None})
    return GatePolicy(**data)
