"""Property tests of the two boundaries where outside data enters tritongate:

a. run directories: any JSON value in any field of ``results.json`` or ``run_identity.json``
   (or either whole document) -> ``tritongate show`` returns 0 or 2 and ``tritongate gate``
   0, 1 or 2: never 4 (a bug), never a traceback, and an error is one line;
b. verdict.md: any string in any field that reaches it (op, case, dtype, markers, error
   text, variant and kernel names, identity device / compiler_ref / commit, suite name,
   overlays, policy op names) leaves it well-formed: balanced <details>, no tag, link,
   image or mention from data, no invisible control character, table rows of the header's
   width, and intraword underscores literal (``grep attention_causal verdict.md``).

Deterministic (``derandomize=True``) and bounded (``max_examples``) for CI.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import re
import shutil
import tempfile
import unicodedata
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tritongate import markers
from tritongate.cli import main
from tritongate.gate.pipeline import write_result
from tritongate.gate.policy import GatePolicy
from tritongate.gate.verdict import run_gate
from tritongate.rundir import IDENTITY, RESULTS, Run, RunWriter
from tritongate.schema import Correctness, MeasurementInfo, PairInfo, Row, RunStatus, SkipReason, Variant

from tests.gate.helpers import IDENTITY as BASE_IDENTITY, samples

SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


@pytest.fixture(autouse=True)
def _quiet_environment(monkeypatch):
    for var in ("GITHUB_STEP_SUMMARY", "TRITONGATE_ARTIFACT_URL", "TRITONGATE_VERDICT_TEMPLATE", "TRITONGATE_OPS_DIR", "NO_COLOR"):
        monkeypatch.delenv(var, raising=False)
    logs = tempfile.mkdtemp(prefix="tritongate-prop-logs-")
    monkeypatch.setenv("TRITONGATE_LOG_DIR", logs)
    yield
    shutil.rmtree(logs, ignore_errors=True)


def call(argv: list[str]) -> tuple[int, str, str]:
    """``tritongate ARGV`` in this process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def assert_no_bug(rc: int, out: str, err: str, allowed: tuple[int, ...], what: str) -> None:
    where = f"{what}: exit {rc}\n--- stderr ---\n{err[-2500:]}\n--- stdout ---\n{out[-800:]}"
    assert "Traceback" not in out and "Traceback" not in err, where
    assert rc in allowed, where
    if rc == 2:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: ") and len(lines[0]) <= 2_300, where


# =============================================================================================
# a. any JSON value in any field of a run directory
# =============================================================================================

def _row(op: str, case: str, dtype: str, *, seed: int, side: str, median: float) -> Row:
    """A row with every field the gate reads filled in (paired, with variants and autotune)."""
    pairing = PairInfo(pair_id="pair-pr_20261129T120000Z", side=side,
                       went_first=tuple((i % 2 == 0) == (side == "base") for i in range(5)),
                       target_effect=0.01, detectable_effect=0.008, target_reached=True, min_rounds=5,
                       max_rounds=20, worker_pairs=(0, 0, 1, 1, 1))  # a call on one worker pair only shows
    return Row(op=op, case=case, dtype=dtype, timer="cuda-graph", samples=samples(median, seed=seed),
               params={"shape": [4096, 4096], "seed": 7}, markers=(),
               measurement=MeasurementInfo(launches_per_sample=25, samples_per_round=5, warmup_calls=50, l2="warm",
                                           shift_bytes=(512, 1024, 2048, 4096, 8192), pairing=pairing),
               correctness=Correctness(ok=True, max_abs_err=0.0, atol=1e-3, rtol=1e-3, detail=""),
               variants=(Variant(kernel=f"tritongate.ops.kernels.{op}_kernel", name="BLOCK=4096 w8 s3",
                                 source_hash="src0", binary_hash=f"bin-{side}", launches=1),),
               flops=1e9, bytes=2e6,
               autotune={"mode": "replay", "sweep_benchmarks": 0,
                         "kernels": [{"kernel": f"tritongate.ops.kernels.{op}_kernel", "used": "replayed"}]})


@lru_cache(maxsize=1)
def template_docs() -> dict[str, dict[str, Any]]:
    """results.json and run_identity.json of a base and a candidate run of one paired check
    (written by RunWriter, read back as JSON): the documents each example damages."""
    root = Path(tempfile.mkdtemp(prefix="tritongate-prop-runs-"))
    keys = [("softmax", "4096x4096", "float16", 20.0), ("attention_causal", "1x8x256x64", "float16", 50.0),
            ("add", "1048576", "float32", 3.0)]
    docs: dict[str, dict[str, Any]] = {}
    for side, name, shift in (("base", "base", 0), ("candidate", "cand", 10)):
        ident = {**BASE_IDENTITY, "replay_from": "/runs/record_20261129T110000Z",
                 "pair": {"pair_id": "pair-pr_20261129T120000Z", "side": side,
                          "build": {"python": f"/{side}/bin/python", "env_overlay": {}}},
                 "gpu_state_after": {"driver": "580.159.04"}}
        rows = [_row(op, case, dtype, seed=shift + i, side=side, median=m * (1.2 if side == "candidate" and i == 0 else 1))
                for i, (op, case, dtype, m) in enumerate(keys)]
        w = RunWriter(root / name, ident, mode="replay")
        for r in rows:
            w.add(r)
        w.finish()
        docs[f"{name}/{RESULTS}"] = json.loads((root / name / RESULTS).read_text())
        docs[f"{name}/{IDENTITY}"] = json.loads((root / name / IDENTITY).read_text())
    shutil.rmtree(root)
    return docs


def test_the_template_runs_gate_cleanly(tmp_path):
    """Sanity: the undamaged documents load, show and gate (a regressed row: exit 1)."""
    rc = _write_and_gate(tmp_path, template_docs())
    assert rc[0] == 0 and rc[1] == 1, rc


PLAUSIBLE = st.sampled_from([0, 1, 2, 3, -1, 25, 1.5, 1e-300, 1e300, -0.0, "", " ", "ok", "error", "timeout", "running",
                             "complete", "failed", "record", "replay", "base", "candidate", "warm", "flush",
                             "cuda-graph", "identical_binary", "other_side_failed", "a b", "=", "reason=x",
                             "GPU_BUSY", "ROW_ERROR reason=boom", "AUTOTUNE_REPLAY_FALLBACK reason=compile_failed kernel=k",
                             "BENCHMARK_DIRECT_NO_CUDAGRAPH phase=replay reason=x", "CORRECTNESS_MISMATCH", "softmax",
                             "NVIDIA H200", "pair-pr_20261129T120000Z", [], {}, [1.0], [True], {"median": 20.0},
                             {"driver": "x"}, {"TRITON_INTERPRET": "1"}, {"DISABLE_MMA_V3": "1"}, [20.0] * 10])
SCALARS = (st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=30) | PLAUSIBLE)
JSON_VALUES = st.recursive(SCALARS, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=10), kids,
                                                                                               max_size=4),
                           max_leaves=10)

ROW_PATHS: list[tuple] = [(), ("op",), ("case",), ("dtype",), ("timer",), ("samples",), ("samples", 0), ("samples", 7),
                          ("samples", 99), ("status",), ("params",), ("params", "shape"), ("params", "planted_work"),
                          ("markers",), ("markers", 0), ("measurement",), ("error",), ("flops",), ("bytes",),
                          ("autotune",), ("skipped",), ("summary",), ("summary", "median"), ("variants",),
                          ("variants", 0), ("variants", 1), ("correctness",)]
ROW_PATHS += [("measurement", k) for k in ("launches_per_sample", "samples_per_round", "warmup_calls", "l2",
                                           "shift_bytes", "pairing")]
ROW_PATHS += [("measurement", "pairing", k) for k in ("pair_id", "side", "went_first", "target_effect",
                                                      "detectable_effect", "target_reached", "min_rounds", "max_rounds")]
ROW_PATHS += [("measurement", "pairing", "went_first", 0)]
ROW_PATHS += [("correctness", k) for k in ("ok", "max_abs_err", "atol", "rtol", "detail")]
ROW_PATHS += [("variants", 0, k) for k in ("kernel", "name", "source_hash", "binary_hash", "launches")]
ROW_PATHS += [("autotune", k) for k in ("mode", "sweep_benchmarks", "kernels")] + [("autotune", "kernels", 0)]
RESULTS_PATHS = [(k,) for k in ("schema_version", "tool_version", "status", "mode", "rows", "failure", "unit")]
RESULTS_PATHS += [("rows", i, *p) for i in (0, 1, 3) for p in ROW_PATHS]

IDENTITY_PATHS: list[tuple] = [(k,) for k in ("schema_version", "tool_version", "mode", "device", "backend", "timer",
                                              "compiler_ref", "commit", "replay_from", "suite", "measure_config",
                                              "codegen_env", "gpu_state_before", "gpu_state_after", "pair")]
IDENTITY_PATHS += [("gpu_state_before", "driver"), ("gpu_state_after", "driver"), ("measure_config", "l2"),
                   ("codegen_env", "TRITON_INTERPRET"), ("codegen_env", "TRITON_DISABLE_LINE_INFO"),
                   ("codegen_env", "TRITON_DEFAULT_FP_FUSION"), ("codegen_env", "NEW_VAR"), ("suite", "name"),
                   ("suite", "digest"), ("suite", "path"), ("pair", "pair_id"), ("pair", "side"), ("pair", "build"),
                   ("pair", "build", "python"), ("pair", "build", "env_overlay"),
                   ("pair", "build", "env_overlay", "DISABLE_MMA_V3")]

TARGETS = (st.tuples(st.sampled_from(["base", "cand"]), st.just(RESULTS), st.sampled_from(RESULTS_PATHS))
           | st.tuples(st.sampled_from(["base", "cand"]), st.just(IDENTITY), st.sampled_from(IDENTITY_PATHS)))


def put(doc: Any, path: tuple, value: Any) -> Any:
    """``doc`` with ``value`` at ``path`` (``()``: the whole document); a list index past the
    end appends, a missing mapping key is added."""
    if not path:
        return value
    node = doc
    for p in path[:-1]:
        if isinstance(node, list):
            if not isinstance(p, int) or p >= len(node):
                return doc  # nothing there: the document is unchanged
            node = node[p]
        elif isinstance(node, dict):
            if p not in node or not isinstance(node[p], (dict, list)):
                node[p] = {} if isinstance(p, str) else []
            node = node[p]
        else:
            return doc
    last = path[-1]
    if isinstance(node, list) and isinstance(last, int):
        if last < len(node):
            node[last] = value
        else:
            node.append(value)
    elif isinstance(node, dict):
        node[last] = value
    return doc


def _write_and_gate(tmp: Path, docs: dict[str, Any], show: str = "cand") -> tuple[int, int]:
    for key, doc in docs.items():
        path = tmp / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, allow_nan=True))
    rc_show, out, err = call(["show", str(tmp / show), "--color", "never"])
    assert_no_bug(rc_show, out, err, (0, 2), "show")
    rc_gate, out, err = call(["gate", str(tmp / "base"), str(tmp / "cand"), "--out", str(tmp / "verdict")])
    assert_no_bug(rc_gate, out, err, (0, 1, 2), "gate")
    return rc_show, rc_gate


@pytest.mark.slow
@settings(max_examples=300, **SETTINGS)
@given(target=TARGETS, value=JSON_VALUES)
def test_any_json_value_in_any_field_is_an_input_error_or_a_verdict_never_a_bug(target, value):
    side, name, path = target
    docs = copy.deepcopy(template_docs())
    key = f"{side}/{name}"
    docs[key] = put(docs[key], path, value)
    with tempfile.TemporaryDirectory() as tmp:
        _write_and_gate(Path(tmp), docs, show=side)


@settings(max_examples=60, **SETTINGS)
@given(side=st.sampled_from(["base", "cand"]), name=st.sampled_from([RESULTS, IDENTITY]), value=JSON_VALUES)
def test_any_json_document_in_place_of_a_run_file_is_an_input_error(side, name, value):
    docs = copy.deepcopy(template_docs())
    docs[f"{side}/{name}"] = value
    with tempfile.TemporaryDirectory() as tmp:
        rc_show, rc_gate = _write_and_gate(Path(tmp), docs, show=side)
    assert rc_show == 2 and rc_gate == 2  # a scalar, list or arbitrary mapping is never a run file


@settings(max_examples=60, **SETTINGS)
@given(row=st.sampled_from([0, 1, 2]), markers=st.lists(st.text(max_size=40) | PLAUSIBLE.filter(lambda v: isinstance(v, str)),
                                                           min_size=1, max_size=3),
       side=st.sampled_from(["base", "cand"]))
def test_any_marker_text_is_an_input_error_or_a_verdict_never_a_bug(row, markers, side):
    """Markers are free text in the file (KIND key=value ... reason=<text>): the gate parses them."""
    docs = copy.deepcopy(template_docs())
    docs[f"{side}/{RESULTS}"]["rows"][row]["markers"] = markers
    with tempfile.TemporaryDirectory() as tmp:
        _write_and_gate(Path(tmp), docs, show=side)


# =============================================================================================
# b. any string that reaches verdict.md leaves it well-formed
# =============================================================================================

HOSTILE = ["\u202eevil", "ad\u200bd", "x\u2066y\u2069", "\ufeffbom", "<img src=x onerror=alert(1)>", "</details>",
           "<details><summary>x</summary>", "</code>", "<!-- x -->", "<sub>", "@octocat", "cc @team/reviewers",
           "[link](javascript:x)", "![img](https://evil.example/x.png)", "[x]: https://evil.example", "`code`", "```",
           "a|b|c", "| --- |", "line1\nline2", "a\r\nb", "\u2028x\u2029", "tab\there", "attention_causal",
           "_em_", "*bold*", "**strong**", "~~del~~", "#123", "# heading", "> quote", "- item", "1. item", "&amp;",
           "&#64;octocat", "&lt;b&gt;", "\\|", "\\", "$x$", "{{ headline }}", "{% raw %}", "\x1b[31mred\x1b[0m",
           "\x00nul", "\x7f", "é\u0301", "🙂", "https://evil.example/x", "<https://evil.example>",
           "www.evil.example", "user@example.com", ":+1:", "javascript:alert(1)", "--- ", "===", "  ", "x" * 300]
HOSTILE_TEXT = (st.sampled_from(HOSTILE)
                | st.text(max_size=60)
                | st.text(alphabet=st.sampled_from(list("<>|`@[]()!*_#~\\&;:/ \n\r\t\u202e\u200b\u2066abcXYZ019-.=")),
                          min_size=1, max_size=40)
                | st.lists(st.sampled_from(HOSTILE), min_size=2, max_size=4).map("".join)
                | st.tuples(st.sampled_from(HOSTILE), st.integers(50, 900)).map(lambda t: (t[0] * t[1])[:1000])
                | st.from_regex(r"[A-Za-z0-9]{1,8}(_[A-Za-z0-9]{1,8}){1,3}", fullmatch=True))


def _named(s: str, fallback: str) -> str:
    """Row keys must be non-empty (the loader refuses empty names) and at most 1,000
    characters (the loader's limit for names)."""
    return s[:1000] if s else fallback


def hostile_runs(s: str, *, long_error: bool, pair_ident: bool, mismatch: bool, copies: int = 1,
                 ident_text: str | None = None) -> tuple[Run, Run, GatePolicy]:
    """A base and a candidate run where ``s`` is in every string field that reaches the verdict
    (``copies`` times each row; ``ident_text``, if given, in the identity's strings instead)."""
    name = _named(s, "x")
    it = s if ident_text is None else ident_text

    def mk(op, case, dtype="float16", *, seed, median=20.0, markers=(), status="ok", error="", variants=(),
           side=None, target_reached=True, skipped=None):
        smp = samples(median, seed=seed) if status == "ok" and skipped is None else ()
        pairing = None
        if side is not None:
            pairing = PairInfo(pair_id=name, side=side, went_first=tuple((i % 2 == 0) == (side == "base") for i in range(5)),
                               target_effect=0.01, detectable_effect=0.05, target_reached=target_reached,
                               min_rounds=5, max_rounds=5)
        return Row(op=op, case=case, dtype=dtype, timer="cuda-graph", samples=smp, status=status, error=error,
                   markers=tuple(markers), variants=tuple(variants), skipped=skipped,
                   measurement=MeasurementInfo(launches_per_sample=25, samples_per_round=5, warmup_calls=50, l2="warm",
                                               pairing=pairing))

    v = Variant(kernel=name, name=name, source_hash=s, binary_hash="same", launches=1)
    err_text = ((s * 40)[:20_000] if long_error else s) or "x"  # an error row needs a text
    marker = markers.make(markers.CORRECTNESS_MISMATCH, reason=s or "x")  # as the runner writes them
    fallback = markers.make(markers.REPLAY_FALLBACK, reason="key_missing", kernel=re.sub(r"\s", "_", name))
    base_rows = [
        mk(name, "regressed", seed=1),  # REGRESSED: the headline names it
        mk(name, "improved", seed=2, median=30.0),  # IMPROVED
        mk("attention_causal", name, _named(s, "float16"), seed=3),  # UNCHANGED: in <details>
        mk(name, "rejected", seed=4, markers=[marker]),  # REJECTED: marker reason
        mk(name, "errored", seed=5),  # REJECTED: the candidate's error text
        mk(name, "fallback", seed=6),
        mk(name, "missing", seed=7),  # MISSING
        mk(name, "identical", seed=8, variants=[v]),  # IDENTICAL_BINARY, timed
        mk(name, "untimed", seed=9, variants=[v], skipped=SkipReason.IDENTICAL_BINARY),
        mk(name, "short", seed=10, side="base", target_reached=False),  # short of the precision target
    ]
    cand_rows = [
        mk(name, "regressed", seed=11, median=25.0),
        mk(name, "improved", seed=12, median=24.0),
        mk("attention_causal", name, _named(s, "float16"), seed=13),
        mk(name, "rejected", seed=14),
        mk(name, "errored", seed=15, status="error", error=err_text),
        mk(name, "fallback", seed=16, markers=[fallback]),
        mk(name, "new", seed=17),  # NEW
        mk(name, "identical", seed=18, variants=[v]),
        mk(name, "untimed", seed=19, variants=[v], skipped=SkipReason.IDENTICAL_BINARY),
        mk(name, "short", seed=20, side="candidate", target_reached=False),
    ]

    if copies > 1:  # the same rows again under other case names: a verdict past the size limit
        base_rows += [replace(r, case=f"{r.case}-{k}") for k in range(1, copies) for r in base_rows[:]]
        cand_rows += [replace(r, case=f"{r.case}-{k}") for k in range(1, copies) for r in cand_rows[:]]

    def ident(side: str, device: str) -> dict[str, Any]:
        d = {**BASE_IDENTITY, "device": device, "compiler_ref": it, "commit": it,
             "suite": {"name": it, "digest": f"{side}-{it}"}, "replay_from": it}
        if pair_ident:
            d["pair"] = {"pair_id": name, "side": side, "build": {"python": it, "env_overlay": {"DISABLE_MMA_V3": it}}}
        return d

    base = Run(path=Path("/runs") / "pr_20261129T120000Z", status=RunStatus.COMPLETE, identity=ident("base", it),
               rows=tuple(base_rows), mode="record")
    cand = Run(path=Path("/runs") / "pr_20261129T121500Z", status=RunStatus.COMPLETE,
               identity=ident("candidate", it + "-other" if mismatch else it), rows=tuple(cand_rows), mode="replay")
    policy = GatePolicy(op_min_effect={name: 0.02, "attention_causal": 0.03})
    return base, cand, policy


TEMPLATE_TAGS = ("<!-- tritongate-verdict -->", "<details>", "</details>", "<summary>", "</summary>", "<code>", "</code>",
                 "<sub>", "</sub>")
INVISIBLE = ("Cc", "Cf", "Co", "Cs", "Zl", "Zp")


def table_blocks(md: str) -> list[list[str]]:
    blocks, cur = [], []
    for line in md.split("\n"):
        if line.startswith("|"):
            cur.append(line)
        elif cur:
            blocks.append(cur)
            cur = []
    if cur:
        blocks.append(cur)
    return blocks


def check_markdown(md: str, s: str) -> None:
    """verdict.md is well-formed whatever ``s`` holds."""
    assert len(md) <= 60_000, len(md)
    assert md.startswith("<!-- tritongate-verdict -->\n") and md.count("<!--") == 1
    # <details> balanced and nested properly
    depth = 0
    for m in re.finditer(r"</?details>", md):
        depth += 1 if m.group() == "<details>" else -1
        assert depth in (0, 1), "a </details> without its <details>, or one nested in another"
    assert depth == 0, "unbalanced <details>"
    # no tag from data: the template's own tags only
    rest = md
    for tag in TEMPLATE_TAGS:
        rest = rest.replace(tag, "")
    assert "<" not in rest, f"a raw '<' from data: {rest[max(0, rest.index('<') - 40): rest.index('<') + 40]!r}"
    # no mention, link, image, code span from data
    assert "@" not in md, "an unescaped @mention"
    assert "](" not in md and "![" not in md and "]:" not in md, "a Markdown link or image from data"
    assert "`" not in md.replace("`verdict.json`", ""), "a code span from data"
    # no invisible or control characters (other than the line breaks of the document itself)
    bad = sorted({f"U+{ord(c):04X}" for c in md if c != "\n" and unicodedata.category(c) in INVISIBLE})
    assert not bad, f"invisible/control characters in verdict.md: {bad}"
    # every table row has the header's cells, and a row never ends early
    for block in table_blocks(md):
        width = block[0].count("|")
        assert re.fullmatch(r"\|(---\|)+", block[1]), block[:2]
        for line in block:
            assert line.count("|") == width and line.endswith("|"), f"a table row of the wrong width: {line[:200]!r}"
    # intraword underscores stay literal: identifiers can be grepped
    assert "attention_causal" in md
    name = s[:1000]
    if re.fullmatch(r"[A-Za-z0-9]+(_[A-Za-z0-9]+)+", name):
        assert name in md, f"{name!r} is not in verdict.md literally"


def render(s: str, tmp: Path, **kw) -> str:
    base, cand, policy = hostile_runs(s, **kw)
    result = run_gate(base, cand, policy, allow_mismatch=kw["mismatch"])
    md_path = write_result(result, tmp).md_path
    json.loads((tmp / "verdict.json").read_text())  # the JSON twin stays valid JSON
    return md_path.read_text(encoding="utf-8")


@pytest.mark.slow
@settings(max_examples=120, **SETTINGS)
@given(s=HOSTILE_TEXT, long_error=st.booleans(), pair_ident=st.booleans(), mismatch=st.booleans())
def test_any_string_leaves_verdict_md_well_formed(s, long_error, pair_ident, mismatch):
    with tempfile.TemporaryDirectory() as tmp:
        md = render(s, Path(tmp), long_error=long_error, pair_ident=pair_ident, mismatch=mismatch)
    check_markdown(md, s)


@pytest.mark.parametrize("s", HOSTILE, ids=[f"hostile-{i}" for i in range(len(HOSTILE))])
def test_each_known_hostile_string_leaves_verdict_md_well_formed(s, tmp_path):
    md = render(s, tmp_path, long_error=False, pair_ident=True, mismatch=False)
    check_markdown(md, s)


LONG_HTML = ("<img src=x onerror=alert(1)>" * 40)[:990]  # with a copy's "-k": at the 1,000-character limit of a name
LONG_IDENTIFIER = "attention_causal_" + "x_" * 400


@pytest.mark.parametrize("s, copies", [(LONG_HTML, 1), (LONG_HTML, 4), (LONG_IDENTIFIER, 1), (LONG_IDENTIFIER, 4),
                                       ("</details>|@x", 10), ("</details>|@x", 40)],
                         ids=["long-html", "long-html-x4", "long-identifier", "long-identifier-x4", "short-x10",
                              "short-x40"])
def test_a_verdict_cut_to_the_size_limit_stays_well_formed(s, copies, tmp_path):
    """Long names, a 20,000-character error text and many rows push verdict.md past the
    60,000-character comment limit: the cut must not leave a <details> or a table row open."""
    md = render(s, tmp_path, long_error=True, pair_ident=True, mismatch=False, copies=copies)
    check_markdown(md, s)


@pytest.mark.parametrize("length", [20_000, 60_000, 99_000])
def test_identity_strings_at_the_loaders_limit_leave_verdict_md_well_formed(length, tmp_path):
    """run_identity.json's compiler_ref, commit, suite name, replay_from and overlay are Text
    (up to 100,000 characters) on disk: the verdict stays under its limit and well-formed."""
    text = ("<b>|@x`" * length)[:length]
    md = render("softmax", tmp_path, long_error=False, pair_ident=True, mismatch=False, ident_text=text)
    check_markdown(md, "softmax")


@pytest.mark.parametrize("s", ["https://evil.example/x", "www.evil.example", "http://10.0.0.1/login"])
def test_no_bare_url_from_data_becomes_a_link(s, tmp_path):
    """GitHub autolinks bare http(s):// and www. text in comments: a name from the code under
    test must not turn into a clickable link in the verdict."""
    md = render(s, tmp_path, long_error=False, pair_ident=True, mismatch=False)
    assert not re.search(r"https?://|www\.", md), re.search(r".{0,40}(https?://|www\.).{0,40}", md).group()


# =============================================================================================
# c. no string from a file reaches YAML, Markdown, CSV or a shell unserialized
# =============================================================================================

FILE_TEXT = HOSTILE_TEXT | st.sampled_from(["host\nnoise_z: 99.0  #", "x\rmin_effect: 9", "a\x85b: 1", "a\u2028ops: {}",
                                            "=HYPERLINK(\"https://evil.example\",\"x\")", "+cmd|' /C calc'!A0",
                                            "-2+3", "@SUM(1)", "\t=1", "$(rm -rf ~)", "`id`", "a'b\"c;d"])


def _md_is_inert(md: str) -> None:
    """Markdown made from file text: no tag, mention, link, image or code span from it, no
    control characters, and every table row as wide as its header."""
    assert not re.search(r"<[A-Za-z/!?]", md), "a tag from file text"
    assert "@" not in md and "](" not in md and "![" not in md
    assert not [c for c in md if c != "\n" and unicodedata.category(c) in INVISIBLE]
    for block in table_blocks(md):
        width = block[0].count("|") - block[0].count("\\|")
        for line in block:
            assert line.count("|") - line.count("\\|") == width and line.endswith("|"), line[:200]


@settings(max_examples=80, **SETTINGS)
@given(device=FILE_TEXT, op=FILE_TEXT, case=FILE_TEXT, step=FILE_TEXT)
def test_no_string_of_a_calibration_reaches_the_policy_file_or_its_report_unserialized(device, op, case, step):
    from tritongate.model.calibration import Calibration, RowCalibration
    from tritongate.calibrate.report import render as render_calibration
    from tritongate.calibrate.thresholds import write_thresholds
    from tritongate.errors import UsageError
    from tritongate.gate.policy import load_policy

    op = _named(op, "x")
    rows = (RowCalibration(op=op, case=_named(case, "c"), dtype="float16", kernel_us=2.0, zero_us=2.0,
                           aa_verdicts=("UNCHANGED",), aa_effects=(-0.013,), detectable=0.01),)
    cal = Calibration(created_utc="2026-11-30T05:00:00+00:00", suite="pr", runner={"device": device, "backend": device},
                      fractions=(0.02,), steps=({"name": step, "wall_s": 1.0},), rows=rows)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gate.yaml"
        path.write_text("min_effect: 0.01\nmin_samples: 10\nops: {}\n")
        try:
            write_thresholds(cal, path, allow_loosen=True)
        except UsageError as exc:  # refused, and nothing written
            assert "nothing was written" in str(exc)
            assert path.read_text() == "min_effect: 0.01\nmin_samples: 10\nops: {}\n"
        else:
            after = load_policy(path)
            assert (after.min_effect, after.noise_z, after.min_samples, after.strict, after.max_missing) == \
                (0.01, GatePolicy().noise_z, 10, False, 0)
            assert dict(after.op_min_effect) == {op: 0.02}
    _md_is_inert(render_calibration(cal))


@settings(max_examples=60, **SETTINGS)
@given(name=FILE_TEXT, kernel=FILE_TEXT, case=FILE_TEXT)
def test_no_variant_name_reaches_ir_diff_summary_md_unescaped(name, kernel, case):
    from tritongate.ir.diff import CHANGED, MISSING_FILE, VariantDiff
    from tritongate.ir.diff_dir import summary_markdown

    diffs = [VariantDiff(case=case, kernel=kernel, name=name, status=CHANGED, added=1, removed=1, rows=(name,)),
             VariantDiff(case=case, kernel=kernel, name=name, status=MISSING_FILE, reason=name)]
    md = summary_markdown(diffs, {0: Path("a") / "b.diff"})
    _md_is_inert(md)
    assert all(not line.startswith(("#", "-")) or line.startswith(("# TTGIR", "## ", "- ")) for line in md.split("\n"))


FORMULA = ("=", "+", "-", "@", "\t", "\r")


def _formula_cells(text: str) -> list[str]:
    import csv as _csv

    records = list(_csv.reader(io.StringIO(text, newline="")))
    assert len(records) == text.count("\n") - sum(c.count("\n") for r in records for c in r), "a record split"
    cells = [c for rec in records for c in rec]
    def is_number(c: str) -> bool:
        try:
            float(c)
            return True
        except ValueError:
            return False
    return [c for c in cells if c.startswith(FORMULA) and not is_number(c)]


@settings(max_examples=60, **SETTINGS)
@given(op=FILE_TEXT, case=FILE_TEXT, error=FILE_TEXT)
def test_no_cell_of_a_csv_export_is_a_spreadsheet_formula(op, case, error):
    from tritongate.batch.status import csv_text
    from tritongate.report.export import render_run

    row = Row(op=_named(op, "x"), case=_named(case, "c"), dtype="float16", timer="cuda-graph",
              samples=samples(20.0, seed=1), measurement=MeasurementInfo(launches_per_sample=25, samples_per_round=5,
                                                                        warmup_calls=50, l2="warm"))
    run = Run(path=Path("/runs/x"), status=RunStatus.COMPLETE, identity=BASE_IDENTITY, rows=(row,), mode="record")
    assert _formula_cells(render_run(run, "csv")) == []
    assert _formula_cells(csv_text(["op", "error"], [{"op": op, "error": error}])) == []


@settings(max_examples=60, **SETTINGS)
@given(value=FILE_TEXT)
def test_no_string_reaches_a_yaml_key_or_comment_or_a_github_output_line_unserialized(value):
    import yaml

    from tritongate.cli.baseline import single_line
    from tritongate.yamlsafe import comment_text, flow_scalar

    doc = f"a: 1\n{flow_scalar(value)}: {flow_scalar(value)}  # {comment_text(value)}\nb: 2\n"
    assert yaml.safe_load(doc) == ({"a": 1, "b": 2} | {value: value})
    line = f"key={single_line(value)}\n"
    assert len(line.splitlines()) == 1 and line.count("\n") == 1


# =============================================================================================
# d. no link is followed out of a root
# =============================================================================================

SECRET = "SECRET-OUTSIDE-THE-ROOT"
# a tree below the root: (path, kind) with kind file, dir, link-out (to a file outside),
# link-dir-out (to a folder outside), link-in (to a file inside the root)
TREE_PATHS = st.sampled_from(["a", "b", "d/a", "d/b", "d/e/a", "x.json", "d/x.ttgir"])
TREES = st.lists(st.tuples(TREE_PATHS, st.sampled_from(["file", "link-out", "link-dir-out", "link-in"])),
                 min_size=1, max_size=6, unique_by=lambda t: t[0])


def _build_tree(top: Path, tree: list[tuple[str, str]]) -> Path:
    root, outside = top / "root", top / "outside"
    (outside / "d" / "e").mkdir(parents=True)
    for rel in ("secret", "d/a", "d/b", "d/e/a", "a", "b", "x.json", "d/x.ttgir"):
        (outside / rel).parent.mkdir(parents=True, exist_ok=True)
        (outside / rel).write_text(SECRET)
    root.mkdir()
    (root / "plain").write_text("inside")
    for rel, kind in tree:
        path = root / rel
        if path.parent.is_symlink() or any(p.is_symlink() or p.is_file() for p in path.parents if root in p.parents):
            continue  # a folder on the way is already a link or a file
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() or path.is_symlink():
            continue
        if kind == "file":
            path.write_text(f"content of {rel}")
        elif kind == "link-out":
            os.symlink(outside / "secret", path)
        elif kind == "link-dir-out":
            os.symlink(outside / "d", path)
        else:
            os.symlink(root / "plain", path)
    return root


def _has_link_on_the_way(root: Path, rel: str) -> bool:
    parts = Path(rel).parts
    return any((root.joinpath(*parts[: i + 1])).is_symlink() for i in range(len(parts)))


@settings(max_examples=80, **SETTINGS)
@given(tree=TREES, probe=TREE_PATHS)
def test_no_link_is_followed_out_of_a_root(tree, probe):
    from tritongate import safefs

    with tempfile.TemporaryDirectory() as tmp:
        root = _build_tree(Path(tmp), tree)
        for rel in {probe, *(r for r, _ in tree), *(f"{r}/a" for r, _ in tree)}:
            linked = _has_link_on_the_way(root, rel)
            try:
                data = safefs.read_bytes(root, rel).decode()
            except safefs.LinkError as exc:
                assert linked, f"{rel}: refused as a link, but no link is on its way"
                assert "symbolic link" in str(exc)
                assert safefs.kind(root, rel) == "link"
                continue
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                assert not linked or not (root / rel).exists(), rel
                continue
            assert not linked, f"{rel}: read through a link"
            assert SECRET not in data and data == (root / rel).read_text()
        with pytest.raises(safefs.LinkError, match="leaves"):
            safefs.read_bytes(root, "../outside/secret")


@pytest.mark.parametrize("where", ["file", "folder"])
def test_a_linked_ttgir_file_is_never_inlined_into_ir_diff_or_the_verdict(tmp_path, where):
    from tests.gate.test_ir_evidence import MATMUL, MMA, runs, ttgir
    from tritongate.gate.ir_evidence import collect

    base, cand = runs(tmp_path)
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "B64_w4.ttgir").write_text(ttgir(MMA + f"    // {SECRET}\n"))
    target = cand.path / "ttgir" / "m512" / "matmul_kernel"
    if where == "file":
        (target / "B64_w4.ttgir").unlink()
        os.symlink(secret / "B64_w4.ttgir", target / "B64_w4.ttgir")
    else:
        shutil.rmtree(target)
        os.symlink(secret, target)
    ev = collect(base.path, cand.path, tmp_path / "verdict")
    written = "".join(p.read_text() for p in (tmp_path / "verdict").rglob("*") if p.is_file())
    assert SECRET not in written and all(SECRET not in (r.head or "") for r in ev.rows.values())
    assert "symbolic link" in written  # named as a link, not as missing
    assert MATMUL


@pytest.mark.parametrize("which", ["results.json", "run_identity.json"])
def test_a_run_file_that_is_a_link_is_refused_as_a_link(tmp_path, which):
    from tritongate.errors import RunDirError
    from tritongate.rundir import load_run

    run = tmp_path / "run"
    w = RunWriter(run, BASE_IDENTITY, mode="record")
    w.add(_row("add", "16", "float32", seed=1, side="base", median=5.0))
    w.finish()
    real = tmp_path / which
    (run / which).rename(real)
    os.symlink(real, run / which)
    with pytest.raises(RunDirError, match=r"is a symbolic link, not followed"):
        load_run(run)


@pytest.mark.parametrize("link", ["records-folder", "results-file"])
def test_a_link_in_a_store_entry_makes_it_damaged_and_is_named_as_a_link(tmp_path, link):
    from tests.baselines.test_store import DAY, T0, lookup, make_record
    from tritongate.baselines import State, publish

    store = tmp_path / "store"
    old = publish(store, make_record(tmp_path / "a", commit="aaa"), runner_class="h200")
    new = publish(store, make_record(tmp_path / "b", started=T0 + DAY, commit="bbb"), runner_class="h200")
    elsewhere = tmp_path / "elsewhere"
    if link == "records-folder":  # the same bytes, but outside the entry
        shutil.copytree(new.path / "autotune_records", elsewhere)
        shutil.rmtree(new.path / "autotune_records")
        os.symlink(elsewhere, new.path / "autotune_records")
    else:
        elsewhere.mkdir()
        shutil.copy(new.path / "results.json", elsewhere / "results.json")
        (new.path / "results.json").unlink()
        os.symlink(elsewhere / "results.json", new.path / "results.json")
    found = lookup(store, now=T0 + 2 * DAY)
    assert found.state is State.OK and found.record == old.path, "the entry with a link was taken"
    assert any("symbolic link" in n for n in found.notes), found.notes
