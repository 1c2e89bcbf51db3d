"""What each build would launch for each row, recaptured on the CPU.

The ahead-of-time diff recompiles the variants the baseline *recorded*. Whether a build
launches those variants at all is decided by its own binder (signature, constexprs,
``tt.divisibility``), its option defaults (``num_warps``, ``num_stages``) and its autotuner
(which may prune the recorded config). So each build replays the record's configs on the
interpreter with ``TRITONGATE_CAPTURE_ONLY=1`` (every launch specialized for the record's GPU
through that build's own binder, none executed), and each row's launched variants are
compared:

- base and candidate launch different variants: the PR changes what the row runs;
- the base build launches other variants than the record: the record's ahead-of-time
  evidence is not about what runs (main moved since the nightly);
- a row either capture lacks: nothing shows it unchanged.

Any of these has the row timed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

from tritongate.childenv import build_env, with_overlay
from tritongate.errors import UsageError
from tritongate.ir.capture import CAPTURE_ONLY_ENV
from tritongate.ir.diff import split_row
from tritongate.ir.index import INDEX, CompiledVariant, read_index
from tritongate.ir.specialize import CAPTURE_TARGET_ENV
from tritongate.prescreen.provider_capture import CAPTURE_JSON, read_not_capturable
from tritongate.prescreen.sides import run_both
from tritongate.recorded import recorded_shapes

RowKey = tuple[str, str, str]
VariantKey = tuple[str, str, str, str, str, str]
CAPTURE_TIMEOUT_S = 3600.0


def variant_key(v: CompiledVariant) -> VariantKey:
    """What a launch is, build-independently: kernel, argument types, constexprs, the
    specialized attributes, compile options and target (not the compile hash: it hashes the
    build too)."""
    def text(value: Mapping[str, Any]) -> str:
        return json.dumps(value, sort_keys=True, default=str)

    return (v.kernel, text(v.signature), text(v.constexprs), text(v.specialization), text(v.options), v.target)


def launched_by_row(ttgir_dir: Path) -> dict[RowKey, frozenset[VariantKey]]:
    """Each row's launched variants in an IR index (sweep losers, never launched, left out)."""
    out: dict[RowKey, set[VariantKey]] = {}
    for v in read_index(Path(ttgir_dir) / INDEX):
        if v.sweep_loser or v.launches <= 0:
            continue
        for row in v.rows:
            op, dtype = split_row(row)
            out.setdefault((op, v.case, dtype), set()).add(variant_key(v))
    return {k: frozenset(s) for k, s in out.items()}


def capture_cmd(python: str, record: Path, suite: str, rows: list[RowKey], out: Path, target: str,
                package_lead: str, overlay: Mapping[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
    """``python -m tritongate run`` replaying ``record``'s configs on the interpreter, capture only
    (``overlay``: the build's own environment)."""
    rows_file = out.with_name(out.name + ".rows.json")
    rows_file.write_text(json.dumps([list(k) for k in rows]), encoding="utf-8")
    env = build_env(os.environ)  # the build is a PR's code: no file commands, no tokens
    env = with_overlay(env, overlay, lead=package_lead)
    env.update({"TRITON_INTERPRET": "1", CAPTURE_ONLY_ENV: "1", CAPTURE_TARGET_ENV: target})
    env.pop("CUDA_VISIBLE_DEVICES", None)
    if _provider_suite(suite):  # FlagGems cannot run on the interpreter: its own capture, real JIT kernels
        env.pop("TRITON_INTERPRET")
        return [python, "-m", PROVIDER_CAPTURE, "--record", str(record), "--suite", suite, "--target", target,
                "--only-rows", str(rows_file), "--out", str(out)], env
    cmd = [python, "-m", "tritongate", "run", "--suite", suite, "--backend", "cpu", "--replay-from", str(record),
           "--only-rows", str(rows_file), "--rounds", "1", "--samples-per-round", "1", "--out", str(out),
           "--color", "never"]
    # the record's shapes (a --shape-file of its own included), as pair replays them, planned for
    # the ops and dtypes of the rows asked for (the record's shapes.yaml has no others)
    shapes = recorded_shapes(record)
    if shapes:
        cmd += ["--shape-file", shapes]
    if rows:
        cmd += ["--ops", ",".join(sorted({op for op, _, _ in rows})), "--dtypes", ",".join(sorted({d for _, _, d in rows}))]
    return cmd, env


PROVIDER_CAPTURE = "tritongate.cli.provider_capture"


def _provider_suite(suite: str) -> bool:
    """Whether ``suite`` takes its ops from FlagGems (a suite that does not load is left to
    ``tritongate run`` to refuse, as before)."""
    from tritongate.errors import GateError
    from tritongate.suites import load_suite

    try:
        return load_suite(suite).provider == "flaggems"
    except GateError:
        return False


def capture_both(pythons: Mapping[str, str], record: Path, suite: str, rows: list[RowKey], out: Path,
                 target: str, package_lead: str, envs: Mapping[str, Mapping[str, str]] | None = None,
                 ) -> tuple[dict[str, Path | None], dict[str, float]]:
    """Both builds' captures at once; each side's run directory (None: the capture failed,
    its log says why) and seconds per side. ``UsageError`` when a build refused the suite."""
    commands = {side: capture_cmd(py, record, suite, rows, out / f"capture-{side}", target, package_lead,
                                  (envs or {}).get(side)) for side, py in pythons.items()}
    codes, walls = run_both(commands, {side: out / f"capture-{side}.log" for side in pythons}, CAPTURE_TIMEOUT_S)
    runs: dict[str, Path | None] = {}
    for side, code in codes.items():
        log = out / f"capture-{side}.log"
        found = sorted(p for p in (out / f"capture-{side}").glob("*") if (p / "ttgir" / INDEX).is_file())
        # exit 2 before a run directory is made: the suite or record refused; after, no row ran
        # under this build (a failed capture: its rows are timed)
        started = any((p / "run_identity.json").is_file() or (p / CAPTURE_JSON).is_file()
                      for p in (out / f"capture-{side}").glob("*"))
        if code == 2 and not started:
            raise UsageError(f"{pythons[side]} -m tritongate run --suite {suite} --replay-from {record} refused its "
                             f"input (exit 2; see {log}); name the baseline's suite with --suite")
        # exit 1 is a run whose rows carry markers (every capture-only row does): still an index
        runs[side] = found[-1] if code in (0, 1) and found else None
    return runs, {f"capture_{side}_s": wall for side, wall in walls.items()}


def respecialized_rows(record_ir: Path, base_ir: Path | None, cand_ir: Path | None,
                       rows: list[RowKey]) -> dict[RowKey, str]:
    """Each of ``rows`` whose launches the ahead-of-time diff cannot vouch for, with why."""
    if base_ir is None or cand_ir is None:
        failed = [side for side, ir in (("base", base_ir), ("candidate", cand_ir)) if ir is None]
        why = (f"the {failed[0]} build's capture of what it launches failed" if len(failed) == 1
               else "both builds' captures of what they launch failed")
        return {k: why for k in rows}
    recorded, base, cand = launched_by_row(record_ir), launched_by_row(base_ir), launched_by_row(cand_ir)
    # a provider capture says why it could not capture a row
    unknown = {side: read_not_capturable(ir.parent) for side, ir in (("base", base_ir), ("candidate", cand_ir))}
    out: dict[RowKey, str] = {}
    for key in rows:
        b, c = base.get(key), cand.get(key)
        if not b or not c:
            side = "base" if not b else "candidate"
            said = unknown[side].get(key)
            out[key] = (f"the {side} build could not capture this row's launches on a CPU: {said}" if said else
                        f"the {side} build's capture launched nothing for this row")
        elif b != c:
            out[key] = (f"the builds launch different variants ({len(b - c)} only under the base, "
                        f"{len(c - b)} only under the candidate)")
        elif b != recorded.get(key, frozenset()):
            out[key] = "the base build launches other variants than the baseline recorded"
    return out


def uncompared_rows(record_ir: Path, compared: dict[RowKey, int]) -> dict[RowKey, str]:
    """The rows with a launched variant the diff does not hold: one that failed to compile
    ahead of time on both sides is in neither tree, so nothing was compared for it (a failure
    on one side is a one-sided entry, a change already). ``compared``: per row, its variants
    in the diff."""
    return {key: "a kernel of this row was not compiled on both sides (prescreen.json lists what failed)"
            for key, variants in launched_by_row(record_ir).items() if compared.get(key, 0) < len(variants)}
