"""One op from first attempt to verdict: retries, dtype rescue and fallback, classification.

An attempt is PASS (exit 0, a complete run with an ok row), SKIP (every row a declared "not
supported", or its only dtype refused by preflight ``check=dtype``), TIMEOUT (never retried) or
FAIL; rc=1 and deaths by a signal are retried up to ``retries`` times, until the same failure
repeats. *Rescue*: an op that fails with several dtypes runs each alone; *fallback*: when
``--dtypes`` narrowed it and none worked, its other dtypes run alone, once. An op is PASS when
any dtype was kept (docs/batch-and-deep-scan.md).
"""

from __future__ import annotations

import re
import shlex
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from tritongate.batch.lane import RUNNING, ProcResult
from tritongate.batch.plan import OPS_DIR, BatchRequest, OpInvocation, OpPlan, tritongate_run, utc_now
from tritongate.batch.status import Attempt, OpResult, OpStatus, row_counts
from tritongate.errors import GateError
from tritongate.rundir import Run, load_run
from tritongate.schema import Row, RowStatus

LOGS = "logs"
_PREFLIGHT = re.compile(r"^!!! PREFLIGHT_FAILED check=(\S+)", re.MULTILINE)
# a declared skip: the op says it cannot run here. Bare "unsupported" is left out on purpose:
# a compiler regression says "unsupported layout ..." and must stay a failure.
_UNSUPPORTED = re.compile(r"^(NotImplementedError|SkipTest|Skipped|unittest\.case\.SkipTest)\b"
                          r"|not supported|can't be supported|cannot be supported", re.IGNORECASE)


def declared_skip(error: str) -> bool:
    return bool(_UNSUPPORTED.search(error))


def retryable(attempt: Attempt) -> bool:
    """rc=1 (the seed's pytest failure) and deaths by a signal (rc < 0, or 128+N from a shell)."""
    rc = attempt.rc
    return attempt.outcome is OpStatus.FAIL and rc is not None and (rc == 1 or rc < 0 or 128 < rc < 160)


def _error_line(stderr: str) -> str:
    """The line of the op's stderr that says what went wrong (bounded)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if ln.startswith(("error:", "internal error", "!!! PREFLIGHT_FAILED")) or "Error" in ln.split(":", 1)[0]:
            return ln[:300]
    return lines[-1][:300] if lines else ""


@dataclass(frozen=True)
class Classified:
    outcome: OpStatus
    signature: str
    reason: str
    run: Run | None


def classify(proc: ProcResult, run_dir: Path | None, stderr: str, dtypes: Sequence[str],
             timeout_s: float | None) -> Classified:
    """What one attempt amounts to (see the module docstring)."""
    run: Run | None = None
    load_error = ""
    if run_dir is not None:
        try:
            run = load_run(run_dir, allow_incomplete=True)
        except GateError as exc:
            load_error = str(exc)[:300]
    if proc.interrupted:
        return Classified(OpStatus.INTERRUPTED, "interrupted", "the batch was interrupted", run)
    if proc.timed_out:
        return Classified(OpStatus.TIMEOUT, "timeout", f"killed at --op-timeout {timeout_s:g} s", run)
    if proc.rc == 0:
        if run is None:
            return Classified(OpStatus.FAIL, "bad_run_dir", load_error or "exited 0 without a run directory", None)
        if not run.complete:
            why = f"exited 0 but {run.path.name} is {run.status.value}"
            return Classified(OpStatus.FAIL, "incomplete_run", why, run)
        if not run.rows:
            return Classified(OpStatus.FAIL, "no_rows", "the run has no rows", run)
        if any(r.status is RowStatus.OK for r in run.rows):
            return Classified(OpStatus.PASS, "", f"{len(run.rows)} rows", run)
        if all(declared_skip(r.error) for r in run.rows):
            return Classified(OpStatus.SKIP, "", f"not supported: {run.rows[0].error[:200]}", run)
        return Classified(OpStatus.FAIL, "no_ok_rows", f"every row failed: {run.rows[0].error[:200]}", run)
    line = _error_line(stderr)
    if proc.rc == 3:
        found = _PREFLIGHT.findall(stderr)
        check = found[-1] if found else "unknown"
        if check == "dtype" and len(dtypes) == 1:  # the backend or op declares it cannot run this dtype
            return Classified(OpStatus.SKIP, "", f"dtype {dtypes[0]} not supported: {line}", run)
        return Classified(OpStatus.FAIL, f"preflight={check}", line or f"preflight {check} failed", run)
    if proc.rc < 0:
        try:
            name = signal.Signals(-proc.rc).name
        except ValueError:
            name = f"signal {-proc.rc}"
        return Classified(OpStatus.FAIL, f"signal={name}", f"killed by {name}" + (f" ({line})" if line else ""), run)
    return Classified(OpStatus.FAIL, f"rc={proc.rc}", f"exit {proc.rc}" + (f": {line}" if line else ""), run)


def _run_dir_of(stdout: str, out: Path, before: set[str]) -> Path | None:
    """The run directory: the last line of stdout (tritongate run's contract), else the
    one folder the attempt created (a crash before printing)."""
    lines = [ln.strip() for ln in stdout.splitlines() if ln.strip()]
    if lines:
        last = Path(lines[-1])
        if last.is_absolute() and last.is_dir() and last.parent.resolve() == out.resolve():
            return last
    new = [p for p in out.iterdir() if p.is_dir() and p.name not in before and p.name != LOGS]
    return max(new, key=lambda p: p.stat().st_mtime_ns) if new else None


def _tail(path: Path, limit: int = 65536) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, 2) - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


@dataclass
class OpRunner:
    """Runs one op of a batch on one device (see the module docstring for the rules)."""

    batch_dir: Path
    request: BatchRequest
    plan: OpPlan
    suite: str
    device: str
    env: Mapping[str, str]
    stop: threading.Event
    replay_from: Path | None
    on_attempt: Callable[[str, Attempt], None]
    launch: Callable[..., ProcResult]  # lane.run_attempt (a fresh process or the lane's worker)
    _runs: dict[str, Run] = field(default_factory=dict)
    _number: int = 0
    _notes_later: list[str] = field(default_factory=list)  # per-dtype retry notes

    @property
    def op_dir(self) -> Path:
        return self.batch_dir / OPS_DIR / self.plan.op

    def _rel(self, path: Path) -> str:
        return path.resolve().relative_to(self.batch_dir.resolve()).as_posix()

    def attempt(self, dtypes: tuple[str, ...] | None, effective: tuple[str, ...]) -> Attempt:
        logs = self.op_dir / LOGS
        logs.mkdir(parents=True, exist_ok=True)
        if not self._number:  # continue the numbering of an earlier (interrupted) batch process
            self._number = max((int(m.group(1)) for p in logs.glob("attempt-*.stdout.log")
                                if (m := re.match(r"attempt-(\d+)", p.name))), default=0)
        self._number += 1
        number = self._number
        stdout, stderr = (logs / f"attempt-{number:02d}.{s}.log" for s in ("stdout", "stderr"))
        before = {p.name for p in self.op_dir.iterdir() if p.is_dir()}
        inv = OpInvocation(op=self.plan.op, suite=self.suite, dtypes=dtypes, out=self.op_dir,
                           replay_from=self.replay_from, options=self.request.options)
        argv = (self.request.command or tritongate_run(self.request.python))(inv)
        (logs / f"attempt-{number:02d}.argv").write_text(shlex.join(argv) + "\n", encoding="utf-8")
        files = {"stdout_log": self._rel(stdout), "stderr_log": self._rel(stderr)}
        try:
            proc = self.launch(argv, env=self.env, stdout=stdout, stderr=stderr, timeout_s=self.request.op_timeout_s,
                               grace_s=self.request.kill_grace_s, stop=self.stop, running_file=self.op_dir / RUNNING)
        except OSError as exc:  # the command itself cannot start: this op fails, the batch goes on
            a = Attempt(number=number, dtypes=dtypes, outcome=OpStatus.FAIL, signature="not_started",
                        reason=f"could not start {argv[0]}: {exc.strerror or exc}", rc=None, wall_s=0.0, run=None,
                        **files)
        else:
            c = classify(proc, _run_dir_of(_tail(stdout), self.op_dir, before), _tail(stderr), effective,
                         self.request.op_timeout_s)
            run = self._rel(c.run.path) if c.run else None
            if c.run is not None:
                self._runs[run] = c.run
            a = Attempt(number=number, dtypes=dtypes, outcome=c.outcome, signature=c.signature, reason=c.reason,
                        rc=proc.rc, wall_s=round(proc.wall_s, 3), run=run, **files)
        self.on_attempt(self.plan.op, a)
        return a

    def tries(self, dtypes: tuple[str, ...] | None, effective: tuple[str, ...]) -> list[Attempt]:
        """One attempt, then retries while retryable, at most ``retries``, stopping when the
        same failure comes twice in a row."""
        out = [self.attempt(dtypes, effective)]
        while retryable(out[-1]) and len(out) <= self.request.retries and not self.stop.is_set() \
                and (len(out) < 2 or out[-2].signature != out[-1].signature):
            out.append(self.attempt(dtypes, effective))
        return out

    def run(self) -> OpResult:
        t0, started = time.monotonic(), utc_now()
        p = self.plan
        notes = list(p.notes)
        if self.request.replay_root is not None and self.replay_from is None:
            notes.append(f"no record for {p.op} under --replay-root {self.request.replay_root} (no op run, "
                         "no merged run/): nothing to replay")
            return self._result(OpStatus.FAIL, [], {}, notes, t0, started)
        first = self.tries(p.ask, p.dtypes)
        last = first[-1]
        together = ",".join(p.dtypes)
        if last.outcome in (OpStatus.PASS, OpStatus.TIMEOUT, OpStatus.INTERRUPTED) \
                or (last.outcome is OpStatus.SKIP and not p.restricted) \
                or (last.signature.startswith("preflight=") and last.signature != "preflight=dtype"):
            return self._result(last.outcome, first, {together: first}, notes + _retry_notes("", first), t0, started)
        attempts = list(first)
        cut_short = False
        groups: dict[str, list[Attempt]] = {}
        if last.outcome is OpStatus.FAIL and len(p.dtypes) > 1:  # rescue: each dtype alone
            cut_short = self._each_alone(p.dtypes, groups, attempts)
            notes.append(f"dtype_rescue: {together} together failed {len(first)}x ({last.reason}); "
                         f"each alone: {_dtype_summary(groups)}")
        else:
            notes += _retry_notes("", first)
            groups = {d: first for d in p.dtypes}
        if p.restricted and not cut_short and not any(g[-1].outcome is OpStatus.PASS for g in groups.values()):
            extra: dict[str, list[Attempt]] = {}
            cut_short = self._each_alone([d for d in p.suite_dtypes if d not in p.dtypes], extra, attempts)
            if extra:  # the seed's fallback (not supported) or last rescue (failed) without --dtypes
                kind = "dtype_fallback" if all(g[-1].outcome is OpStatus.SKIP for g in groups.values()) \
                    else "dtype_rescue"
                notes.append(f"{kind}: --dtypes {together} gave no rows; the op's other dtypes alone: "
                             f"{_dtype_summary(extra)}")
                groups.update(extra)
        finals = {g[-1].outcome for g in groups.values()}
        if cut_short or OpStatus.INTERRUPTED in finals:
            status = OpStatus.INTERRUPTED  # not every dtype got its chance: --resume reruns the op
        else:
            status = next((s for s in (OpStatus.PASS, OpStatus.FAIL, OpStatus.TIMEOUT) if s in finals), OpStatus.SKIP)
        return self._result(status, attempts, groups, notes, t0, started)

    def _each_alone(self, dtypes: Sequence[str], groups: dict[str, list[Attempt]], attempts: list[Attempt]) -> bool:
        """Run each dtype alone (with retries); True when the batch stopped before the end."""
        for d in dtypes:
            if self.stop.is_set():
                return True
            groups[d] = self.tries((d,), (d,))
            attempts += groups[d]
            self._notes_later.extend(_retry_notes(f"{d}: ", groups[d]))
        return any(g[-1].outcome is OpStatus.INTERRUPTED for g in groups.values())

    def _result(self, status: OpStatus, attempts: list[Attempt], groups: Mapping[str, list[Attempt]],
                notes: list[str], t0: float, started: str) -> OpResult:
        if status is not OpStatus.PASS and attempts and attempts[-1].reason not in " ".join(notes):
            notes = [*notes, attempts[-1].reason]  # why it did not pass, in one place
        kept = list(dict.fromkeys(a.run for a in (g[-1] for g in groups.values())
                                  if a.outcome is OpStatus.PASS and a.run)) if status is OpStatus.PASS else []
        rows: list[Row] = [r for run in kept for r in self._runs[run].rows]
        seen = {r.dtype for r in rows}  # the dtypes actually measured, in suite order
        dtypes = [d for d in self.plan.suite_dtypes if d in seen] + sorted(seen - set(self.plan.suite_dtypes))
        ident = next((self._runs[r].identity for r in kept), None) or next(
            (self._runs[a.run].identity for a in reversed(attempts) if a.run in self._runs), {})
        return OpResult(
            op=self.plan.op, status=status, device=self.device, attempts=tuple(attempts), runs=tuple(kept),
            dtypes=tuple(dtypes), **row_counts(rows), notes=tuple([*notes, *self._notes_later]),
            backend=str(ident.get("backend") or self.request.options.backend),
            device_name=str(ident.get("device") or ""), timer=str(ident.get("timer") or ""),
            wall_s=time.monotonic() - t0, started_utc=started, finished_utc=utc_now(),
            replay_from=str(self.replay_from.resolve()) if self.replay_from else "")

    def kept_rows(self, result: OpResult) -> dict[str, tuple[Row, ...]]:
        return {run: self._runs[run].rows for run in result.runs}


def _dtype_summary(groups: Mapping[str, list[Attempt]]) -> str:
    return ", ".join(f"{d} {g[-1].outcome.value}" + (f" ({g[-1].signature or g[-1].reason})"
                                                     if g[-1].outcome is not OpStatus.PASS else "")
                     for d, g in groups.items())


def _retry_notes(label: str, attempts: Sequence[Attempt]) -> list[str]:
    """Say when an op needed more than one try, and why it stopped trying."""
    if len(attempts) < 2:
        return []
    seq = ", ".join(a.signature or a.outcome.value for a in attempts)
    if attempts[-1].outcome is OpStatus.PASS:
        return [f"{label}flaky: passed on attempt {len(attempts)} of {len(attempts)} ({seq})"]
    if attempts[-1].signature == attempts[-2].signature:
        return [f"{label}deterministic: {attempts[-1].signature} twice in a row, not retried further ({seq})"]
    return [f"{label}failed {len(attempts)} times ({seq})"]
