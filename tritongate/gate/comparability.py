"""Are two runs comparable? Checked on the run identities before any statistics.

Keys whose difference makes every timing meaningless (another GPU model, driver, backend,
timer, code-generation settings that change the emitted code) are listed here; a mismatch
is refused, or, when the caller allows it, turns every row NOT_COMPARABLE. The compiler
itself is expected to differ: that is what is being tested.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

Identity = Mapping[str, Any]


def _gpu_driver(ident: Identity) -> Any:
    return (ident.get("gpu_state_before") or {}).get("driver")


def _env(name: str) -> Callable[[Identity], Any]:
    getter = lambda ident: (ident.get("codegen_env") or {}).get(name)  # noqa: E731
    getter.env_name = name  # type: ignore[attr-defined]
    return getter


def overlaid_env(ident: Identity) -> dict[str, str]:
    """Environment a paired run set on this side on purpose (``--base-env`` / ``--cand-env``)."""
    build = (ident.get("pair") or {}).get("build") or {}
    overlay = build.get("env_overlay") or {}
    return {str(k): str(v) for k, v in overlay.items()} if isinstance(overlay, dict) else {}


def _suite_name(ident: Identity) -> Any:
    suite = ident.get("suite")
    return suite.get("name") if isinstance(suite, Mapping) else None


COMPARABILITY_KEYS: dict[str, Callable[[Identity], Any]] = {
    # two suites share a row now and then; gating that one row passed for a comparison of both
    "suite": _suite_name,
    "GPU model": lambda i: i.get("device"),
    "driver": _gpu_driver,
    "backend": lambda i: i.get("backend"),
    "timer": lambda i: i.get("timer"),
    "line info (TRITON_DISABLE_LINE_INFO)": _env("TRITON_DISABLE_LINE_INFO"),
    "fp fusion (TRITON_DEFAULT_FP_FUSION)": _env("TRITON_DEFAULT_FP_FUSION"),
    "interpreter (TRITON_INTERPRET)": _env("TRITON_INTERPRET"),
    "L2 policy": lambda i: (i.get("measure_config") or {}).get("l2"),
}


@dataclass(frozen=True)
class Mismatch:
    key: str
    base: Any
    cand: Any

    def __str__(self) -> str:
        return f"{self.key}: base {self.base!r}, candidate {self.cand!r}"


def identity_mismatches(base: Identity, cand: Identity) -> list[Mismatch]:
    """Differences that make timings incomparable; a setting a paired run overlaid on one
    side on purpose is what is being tested, not a mismatch."""
    intended = set(overlaid_env(base)) | set(overlaid_env(cand))
    out = []
    for key, get in COMPARABILITY_KEYS.items():
        if getattr(get, "env_name", None) in intended:
            continue
        b, c = get(base), get(cand)
        if b != c:
            out.append(Mismatch(key, b, c))
    return out


def planted_knobs(ident: Identity) -> str:
    """The test knobs a run was made with (``TRITONGATE_PLANTED_DELAY``, ``..._WORK``), or ""."""
    knobs = []
    delay = ident.get("planted_delay")
    if isinstance(delay, dict):
        knobs.append(f"TRITONGATE_PLANTED_DELAY, fraction {delay.get('fraction')}")
    work = ident.get("planted_work", 1)
    if work not in (1, None):
        knobs.append(f"TRITONGATE_PLANTED_WORK={work}")
    return "; ".join(knobs)


def _partnered(ident: Identity) -> str | None:
    """How a run's CUDA process was kept at the paired level (harness.gpu_turns): "paired"
    (a side of a paired run), "partner", "none" (no partner, or one that stopped); None:
    not recorded (not CUDA, or a run from before partners)."""
    if ident.get("pair"):
        return "paired"
    if "gpu_turns" not in ident:
        return None
    turns = ident.get("gpu_turns")
    return "partner" if isinstance(turns, dict) and turns.get("partner") else "none"


def notes(base: Identity, cand: Identity, base_path: str | None = None) -> list[str]:
    """Differences worth saying that do not stop a comparison."""
    out = []
    for side, ident in (("base", base), ("candidate", cand)):
        overlay = overlaid_env(ident)
        if overlay:
            out.append(f"{side} environment overlay: " + " ".join(f"{k}={v}" for k, v in sorted(overlay.items())))
        settled = ident.get("graph_state")
        if isinstance(settled, dict) and settled.get("primed_graphs") == 0:
            out.append(f"the {side} did not settle its CUDA-graph launch state (TRITONGATE_GRAPH_PRIME=0): a small "
                       "kernel's first rounds in a process may have run ~0.18 µs a launch faster than the rest")
        turns = ident.get("gpu_turns")
        if isinstance(turns, dict) and turns.get("failure"):
            out.append(f"the {side}'s GPU-turn partner stopped ({turns['failure']}): its rounds after that ran at "
                       "the slower CUDA-graph launch level, ~0.18 µs a launch above a paired run's")
        planted = planted_knobs(ident)
        if planted:
            out.append(f"the {side} is a planted run ({planted}): its builtin kernels were slowed on purpose, "
                       "for a calibration; this is not a comparison of compilers")
    kept = (_partnered(base), _partnered(cand))
    if None not in kept and "none" in kept and kept[0] != kept[1]:
        without = "base" if kept[0] == "none" else "candidate"
        out.append(f"the {without} measured without a GPU-turn partner (TRITONGATE_GPU_TURNS=0) and the other side "
                   "with one: small kernels' rounds ran at CUDA-graph launch levels ~0.18 µs a launch apart "
                   "(each round's level is in its launch_state_us)")
    if base.get("backend") == cand.get("backend") == "cpu":
        # the interpreter runs a kernel's Python semantics: no compiler pass, no code generation
        out.append("both sides ran on the Triton interpreter (--backend cpu): the times compare the two "
                   "builds' interpreters and Python code, not the code they would generate; a compiler "
                   "change is judged on a GPU")
    bs, cs = base.get("suite") or {}, cand.get("suite") or {}
    if bs.get("digest") and bs.get("digest") != cs.get("digest"):
        out.append(f"suite files differ (base {bs.get('name')} {str(bs.get('digest'))[:8]}, candidate "
                   f"{cs.get('name')} {str(cs.get('digest'))[:8]}): rows only on one side are MISSING or NEW")
    bp, cp = base.get("pair") or {}, cand.get("pair") or {}
    if bp.get("pair_id") and bp.get("pair_id") == cp.get("pair_id"):
        # one paired run: both sides replayed the same baseline, round by round
        bb, cb = bp.get("build") or {}, cp.get("build") or {}
        if bb.get("python") == cb.get("python") and (bb.get("env_overlay") or {}) == (cb.get("env_overlay") or {}):
            out.append("base and candidate are the same build (same interpreter, no overlay difference): "
                       "this is an A/A check of the harness, not a test of a compiler change")
        sched = cp.get("schedule") or {}
        cap, needed = sched.get("max_rounds"), sched.get("confirm_rounds")
        if sched.get("confirm_calls") and isinstance(cap, int) and isinstance(needed, int) and needed > cap:
            out.append(f"the round cap ({cap}, --max-rounds) is below the {needed} rounds a call needs: any change "
                       f"found stays UNCONFIRMED and cannot fail the gate; give --max-rounds {needed} or more")
    elif cand.get("mode") != "replay":
        out.append("the candidate is not a replay run: autotune may have picked other configs than the "
                   "base, so differences can come from config flips rather than the compiler")
    elif base.get("mode") == "record" and cand.get("replay_from") and base_path \
            and Path(str(cand.get("replay_from"))).name != Path(base_path).name:
        # a run is known by its directory name (suite + UTC stamp): artifacts move, names stay
        out.append(f"the candidate replayed {cand.get('replay_from')}, not this base run")
    return out
