"""The sticky comment rendered by the trusted comment job itself, from ``verdict.json``.

The verdict folder comes from a job that ran the PR's code, so its ``verdict.md`` may say
anything (a fake pass line, mentions, images, links). It is never posted. The comment is
built here from ``verdict.json`` instead, after the package's own model has validated it
(``VerdictDoc``, strict types), by the one verdict renderer, which escapes every string of
it (``report.untrusted``). The pass/fail line is taken from ``passed`` and from the rows under
the document's own policy, as the gate decides (``judge``): a document that claims ``passed:
true`` while listing REGRESSED rows, rows that fail the policy (REJECTED ones under
``--strict``, MISSING ones past ``--max-missing``), a state its rows do not give, or a row word
against the sign of its change, is shown as its rows say, under a warning naming the
contradiction.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Optional

from tritongate.errors import RunDirError
from tritongate.model.verdict import FAILING, JUDGED, UNVERIFIED, Verdict, VerdictDoc, VerdictPolicyDoc
from tritongate.validation import validate

MAX_BODY_CHARS = 60_000  # headroom under GitHub's 65,536 for the state line and the footer


class UntrustedVerdictError(ValueError):
    """verdict.json is not a verdict this tritongate reads. One line."""


@dataclass(frozen=True)
class Judgement:
    """What the comment says, computed here from the rows, never taken from the artifact's text."""

    passed: bool
    counts: dict[str, int]
    contradiction: Optional[str]
    failed: bool = False  # a row or the policy fails the gate, whatever the document says
    judged: bool = False  # some row was judged (timed, or its binaries compared)

    @property
    def regressed(self) -> int:
        return self.counts.get(Verdict.REGRESSED, 0)

    @property
    def rejected(self) -> int:
        return self.counts.get(Verdict.REJECTED, 0)


def parse_verdict_doc(data: bytes, source: str) -> VerdictDoc:
    """``verdict.json`` bytes as a validated ``VerdictDoc`` of a schema version this package reads."""
    from tritongate.gate.verdict import VERDICT_SCHEMA_VERSION
    from tritongate.gate.verdict_file import MIN_READABLE_VERDICT_VERSION

    try:
        raw = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise UntrustedVerdictError(f"{source} is not UTF-8") from None
    except (ValueError, RecursionError) as exc:
        raise UntrustedVerdictError(f"{source} is not valid JSON ({str(exc)[:120]})") from None
    if not isinstance(raw, dict):
        raise UntrustedVerdictError(f"{source} is not a JSON object")
    version = raw.get("schema_version")
    if type(version) is not int or not MIN_READABLE_VERDICT_VERSION <= version <= VERDICT_SCHEMA_VERSION:
        raise UntrustedVerdictError(f"{source}: schema_version {json.dumps(version)[:20]} is not one this tritongate "
                                    f"reads ({MIN_READABLE_VERDICT_VERSION}-{VERDICT_SCHEMA_VERSION})")
    try:
        return validate(VerdictDoc, raw, source=source, error=RunDirError)
    except RunDirError as exc:
        raise UntrustedVerdictError(str(exc)) from None


def judge(doc: VerdictDoc) -> Judgement:
    """Pass or fail as the gate decides it, from the rows and the policy the document carries
    (``GateResult.failures``): REGRESSED and policy-failing rows always fail; REJECTED and
    NOT_COMPARABLE ones under ``strict``; MISSING ones past ``max_missing``; rows that could not
    resolve their target under ``fail_on_blind``."""
    counts: Counter[str] = Counter(str(row.verdict) for row in doc.rows)  # keyed as verdict.json's counts
    policy, rules = sum(1 for row in doc.rows if row.fails_policy), doc.policy or VerdictPolicyDoc()
    failing = {"REGRESSED": sum(counts[name] for name in FAILING), "policy-failing": policy}
    if rules.strict:
        failing["unverified (under --strict)"] = sum(1 for row in doc.rows
                                                     if row.verdict in UNVERIFIED and not row.fails_policy)
    if counts[Verdict.MISSING] > rules.max_missing:
        failing[f"MISSING (more than {rules.max_missing})"] = counts[Verdict.MISSING]
    if rules.fail_on_blind:
        failing["unresolved (under --fail-on-blind)"] = _blind_count(doc)
    # a gate that judged no row did not pass (one before 2026-12-06 wrote passed: true, blind)
    seen = any(row.verdict in JUDGED for row in doc.rows)
    passed = doc.passed and not any(failing.values()) and doc.exit_code == 0 and seen
    contradiction = None
    if doc.passed and (any(failing.values()) or doc.exit_code != 0):
        listed = ", ".join(f"{n} {what}" for what, n in failing.items())
        contradiction = f"verdict.json says passed, but lists {listed} rows (exit code {doc.exit_code}): shown as failing"
    elif any(doc.counts.get(name, 0) != counts[name] for name in set(doc.counts) | set(counts)):
        contradiction = "verdict.json's counts do not match its rows: the counts here are the rows'"
    return Judgement(passed=passed, counts={str(k): n for k, n in counts.items()}, contradiction=contradiction,
                     failed=any(failing.values()), judged=seen)


def _blind_count(doc: VerdictDoc) -> int:
    blind = doc.blind_rows
    return len(blind) if isinstance(blind, list) else int(blind or 0)


def as_its_rows_say(doc: VerdictDoc) -> tuple[VerdictDoc, Optional[str]]:
    """``doc`` and ``None`` when its pass/fail, counts, state and each row's word agree with its
    rows; otherwise the document as its rows say (pass/fail, counts, state) and the
    contradiction, named. A gate never writes such a document; a hand or a PR may."""
    from tritongate.report.verdict_view import fallback_state

    j = judge(doc)
    # the state from the rows and the policy alone: never from the exit code or state it claims
    # (a document not passing over judged rows, by its own word or its exit code, is shown failing)
    state = fallback_state(j.failed or (not j.passed and j.judged), doc.rows)[0]
    problem = j.contradiction
    if problem is None and (doc.state or state) != state:
        if state == "fail" and not j.failed:  # the rows alone do not fail it: its own word does
            problem = (f"verdict.json says its state is {doc.state!r}, but that it did not pass (passed: "
                       f"{json.dumps(doc.passed)}, exit code {doc.exit_code}): shown as failing")
        else:
            problem = f"verdict.json says its state is {doc.state!r}, but its rows give {state!r}: shown from the rows"
    if problem is None:
        odd = [r for r in doc.rows if r.effect is not None and (
            (r.verdict is Verdict.REGRESSED and r.effect < 0) or (r.verdict is Verdict.IMPROVED and r.effect > 0))]
        if odd:
            r = odd[0]
            problem = (f"verdict.json calls {len(odd)} row(s) against the sign of their change (first: "
                       f"{r.op} {r.case} {r.dtype} {r.verdict.value} at {r.effect:+.2%})")
    if problem is None:
        return doc, None
    return doc.model_copy(update={"passed": j.passed, "state": state, "counts": j.counts}), problem


def render_comment_body(doc: VerdictDoc, *, limit: int = MAX_BODY_CHARS) -> str:
    """The sticky comment's Markdown for a validated verdict document (without the state line):
    the same text as the job's verdict.md (shipped layout) for a document whose pass/fail, counts
    and state agree with its rows; for any other, the document as its rows say, under a warning.
    ``limit``: its size cap (the gate writes verdict.md at ``verdict_markdown.COMMENT_LIMIT``)."""
    from tritongate.report.verdict_markdown import render_verdict

    shown, problem = as_its_rows_say(doc)
    return render_verdict(shown, limit=limit, warning=problem) if problem else render_verdict(doc, limit=limit)
