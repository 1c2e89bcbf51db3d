"""The dashboard's files: its data is history's, damage is a gap with a note, names are escaped,
links reach the store, and a build that fails leaves the earlier site (or nothing) behind."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

import tritongate.dashboard.site as site_module
from tritongate.dashboard import UPLOT_VERSION, DashboardError, build_site
from tritongate.dashboard.pages import compare_url, window_drift
from tritongate.dashboard.reading import find_entries, read_groups
from tritongate.baselines.repo import parse_repo
from tritongate.history.changepoints import Detection
from tritongate.history.report import build_report
from tritongate.history.series import load_history
from tritongate.report.untrusted import neutralize

from tests.dashboard.helpers import HOSTILE, NIGHTS, STEP_DATE, damage, make_store
from tests.gate.helpers import row
from tests.history.helpers import T0, publish_nights

NOW = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)
STATIC = Path(site_module.__file__).parent / "static"
_DATA = re.compile(r'<script type="application/json" id="tg-data">(.*?)</script>', re.S)


def doc_of(page: Path) -> dict:
    """The JSON document a page embeds."""
    (text,) = _DATA.findall(page.read_text(encoding="utf-8"))
    return json.loads(text)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A store of two GPUs (two groups) and its site."""
    tmp = tmp_path_factory.mktemp("dash")
    store, entries = make_store(tmp)
    publish_nights(store, tmp / "h100", [[row(median=30.0 + i % 2, seed=i)] for i in range(4)], device="NVIDIA H100")
    summary = build_site(store, tmp / "site", now=NOW)
    return store, entries, tmp / "site", summary


def _pages(out: Path) -> dict[tuple[str, str], dict]:
    """(gpu, op) -> the op page's document."""
    docs = [doc_of(p) for p in sorted((out / "ops").glob("*.html"))]
    return {(d["group"]["gpu"], d["op"]): d for d in docs}


def test_the_site_s_data_is_history_s_series_and_change_points(built):
    store, _, out, summary = built
    pages = _pages(out)
    index = doc_of(out / "index.html")
    assert summary.groups == 2 and summary.rows == 4 == len(index["rows"]) and summary.pages == 3
    for gpu in ("nvidia-h200", "nvidia-h100"):
        report = build_report(load_history(store, "h200", "pr", gpu, compiler_repo="org/triton"), Detection(), now=NOW)
        entries = report.history.entries
        for a in report.analyses:
            s = a.series
            doc = pages[(gpu, neutralize(s.op))]
            (shown,) = [r for r in doc["rows"] if (r["case"], r["dtype"]) == (neutralize(s.case), neutralize(s.dtype))]
            first = shown["first"]
            assert shown["v"] == [p.median_us for p in s.points]
            assert doc["entries"]["t"][first: first + len(s.points)] == [int(p.recorded.timestamp()) for p in s.points]
            assert doc["entries"]["c"][first: first + len(s.points)] == [p.commit for p in s.points]
            assert [doc["reasons"][k] for _, k in shown["gaps"]] == [p.gap for p in s.points if p.gap]
            assert [j for j, _ in shown["gaps"]] == [j for j, p in enumerate(s.points) if p.is_gap]
            assert shown["drift"] == (a.drift if a.change_points else None) and shown["noise"] == a.noise
            assert [(c["i"] - first, c["rel"], c["mb"], c["ma"], c["p"], c["new"]) for c in shown["cps"]] == \
                [(c.index, c.rel_change, c.median_before_us, c.median_after_us, c.p_value, report.is_new(c))
                 for c in a.change_points]
        assert len(doc["entries"]["t"]) == len(entries)
    # the planted step, on the index too, newest first
    (cp,) = index["cps"]
    assert (cp["op"], cp["case"], dt.datetime.fromtimestamp(cp["at"], dt.timezone.utc).date().isoformat()) == \
        ("softmax", "4096x4096", STEP_DATE)
    assert 0.07 < cp["rel"] < 0.09 and cp["url"].startswith("https://github.com/org/triton/compare/")
    assert cp["cfg"] is True  # autotune chose another config from the step's night on (tests.dashboard.helpers)


def test_each_read_entry_gives_its_rows_iqr(built):
    store = built[0]
    entries, _ = find_entries(store, gpu="nvidia-h200")
    (group,) = read_groups(store, entries)
    assert group.history is not None and set(group.iqr) == {e.record_path for e in group.history.entries}
    iqrs = [v for rows in group.iqr.values() for v in rows.values()]
    assert len(iqrs) == sum(not p.is_gap for s in group.history.series for p in s.points) and min(iqrs) > 0


def test_a_damaged_entry_is_a_gap_with_a_note(tmp_path, built):
    store = tmp_path / "store"
    shutil.copytree(built[0], store)
    bad = store / built[1][17].relative_to(built[0])
    damage(bad)
    summary = build_site(store, tmp_path / "site", gpu="NVIDIA H200", now=NOW)
    assert summary.damaged == 1 and summary.groups == 1
    doc = _pages(tmp_path / "site")[("nvidia-h200", "softmax")]
    ((night, folder, reason),) = doc["damaged"]
    assert folder == bad.name and "results.json does not match its sha256" in reason
    assert night == int((T0 + dt.timedelta(days=18)).timestamp()) and night not in doc["entries"]["t"]
    index = doc_of(tmp_path / "site" / "index.html")
    assert any("sha256" in n and bad.name in n for n in index["groups"][0]["notes"])
    history = load_history(store, "h200", "pr", "NVIDIA H200")  # history skips it too: the same series
    assert [r["v"] for r in doc["rows"]] == [[p.median_us for p in s.points] for s in history.series
                                             if s.op == "softmax"]
    # an entry whose manifest cannot be read is counted as damaged too (no group can claim it)
    unreadable = store / built[1][3].relative_to(built[0])
    (unreadable / "manifest.json").write_text("{not json", encoding="utf-8")
    again = build_site(store, tmp_path / "site", gpu="NVIDIA H200", now=NOW)
    assert again.damaged == 2 and again.entries == summary.entries - 1
    assert "2 damaged" in again.headline() and any(unreadable.name in n for n in again.notes)
    # neither a link in the store nor a damaged entry of another GPU is damage of this site
    (store / "latest").symlink_to("h200")
    other = unreadable.parent.parent / "nvidia-h100" / "20261130T030000Z-0123456789ab"
    shutil.copytree(unreadable, other)
    filtered = build_site(store, tmp_path / "site", gpu="NVIDIA H200", now=NOW)
    assert filtered.damaged == 2 and any("a symlink" in n for n in filtered.notes)
    assert build_site(store, tmp_path / "site", now=NOW).damaged == 3


def test_every_string_from_the_store_is_escaped(built):
    out = built[2]
    for page in [out / "index.html", *(out / "ops").glob("*.html")]:
        text = page.read_text(encoding="utf-8")
        assert "<img" not in text and "<b>" not in text and "<i>" not in text, page
        assert text.count("</script>") == text.count("<script"), page  # no block closed early
    (hostile,) = [p for p in (out / "ops").glob("*.html") if "img" in p.name]
    assert re.fullmatch(r"[A-Za-z0-9._-]+\.html", hostile.name)
    text = hostile.read_text(encoding="utf-8")
    assert '<h1 id="op-name">&lt;img src=x onerror=alert(1)&gt;&lt;/script&gt;&lt;b&gt;op</h1>' in text
    assert doc_of(hostile)["op"] == HOSTILE and doc_of(hostile)["rows"][0]["case"] == "n=<i>4096</i>"
    for name in ("common.js", "index.js", "op.js"):  # strings reach the page through textContent only
        assert not re.search(r"\.(inner|outer)HTML\b|insertAdjacentHTML|document\.write|eval\(",
                             (STATIC / name).read_text()), name


def test_points_and_change_points_link_to_their_entries(built):
    store, entries, out, _ = built
    doc = _pages(out)[("nvidia-h200", "softmax")]
    folders = [(out / "ops" / f"{doc['store']}/{doc['prefix']}/{e}").resolve() for e in doc["entries"]["e"]]
    assert folders == [e.resolve() for e in entries]
    assert compare_url(parse_repo("org/triton"), "a" * 40, "b" * 40) == \
        f"https://github.com/org/triton/compare/{'a' * 40}...{'b' * 40}"
    assert compare_url(parse_repo("gitlab.com/org/triton"), "a" * 40, "b" * 40) is None
    assert compare_url(parse_repo("org/triton"), "main", "b" * 40) is None
    assert compare_url(None, "a" * 40, "b" * 40) is None


def test_store_url_and_window(tmp_path, built):
    out = tmp_path / "site"
    build_site(built[0], out, gpu="nvidia-h200", store_url="https://example.org/tree/data/", window_nights=5, now=NOW)
    doc = _pages(out)[("nvidia-h200", "softmax")]
    assert doc["store"] == "https://example.org/tree/data"
    (step,) = [r for r in doc_of(out / "index.html")["rows"] if r["case"] == "4096x4096"]
    assert step["nc"] == 1 and step["nw"] == 0 and step["dw"] is None and step["dt"] > 0.07  # the step is older
    with pytest.raises(DashboardError, match="--store-url"):
        build_site(built[0], out, store_url="javascript:alert(1)")


def test_window_drift_is_the_level_now_over_the_level_at_the_window_s_start(built):
    report = build_report(load_history(built[0], "h200", "pr", "nvidia-h200"), Detection(), now=NOW)
    (a,) = [a for a in report.analyses if a.change_points]
    cp = a.change_points[0]
    assert window_drift(a.change_points, cp.before.recorded) == pytest.approx(cp.rel_change)
    assert window_drift(a.change_points, cp.after.recorded) is None  # no shift confirmed since: not a measured 0
    assert NIGHTS > 20


def test_a_failed_build_leaves_the_earlier_site_whole(tmp_path, built, monkeypatch):
    out = tmp_path / "site"
    build_site(built[0], out, gpu="nvidia-h100", now=NOW)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    calls = {"n": 0}
    real = site_module.op_document

    def fail_late(*args, **kwargs):  # the first page renders, the second fails
        calls["n"] += 1
        if calls["n"] > 1:
            raise RuntimeError("disk full")
        return real(*args, **kwargs)

    monkeypatch.setattr(site_module, "op_document", fail_late)
    with pytest.raises(RuntimeError, match="disk full"):
        build_site(built[0], out, now=NOW)
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    monkeypatch.setattr(site_module, "_replace", boom)  # every file written, the rename fails
    with pytest.raises(RuntimeError):
        build_site(built[0], tmp_path / "new", now=NOW)
    assert not (tmp_path / "new").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]  # no temp folder left


def test_the_earlier_site_is_replaced_whole(tmp_path, built):
    out = tmp_path / "site"
    build_site(built[0], out, now=NOW)
    (out / "ops" / "stale.html").write_text("old")
    build_site(built[0], out, gpu="nvidia-h100", now=NOW)
    assert not (out / "ops" / "stale.html").exists() and len(list((out / "ops").iterdir())) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


@pytest.mark.parametrize("case, match", [
    ("foreign", "not a tritongate dashboard"), ("inside", "overlap"), ("missing", "not a directory"),
    ("empty", "no entries"), ("window", "--window-nights")])
def test_usage_errors_name_the_input(tmp_path, built, case, match):
    store, out = built[0], tmp_path / "site"
    kw: dict = {}
    if case == "foreign":
        out.mkdir()
        (out / "notes.txt").write_text("mine")
    elif case == "inside":
        out = store / "site"
    elif case == "missing":
        store = tmp_path / "nowhere"
    elif case == "empty":
        kw["suite"] = "deep"
    else:
        kw["window_nights"] = 0
    with pytest.raises(DashboardError, match=match):
        build_site(store, out, **kw)
    if case == "foreign":
        assert (out / "notes.txt").read_text() == "mine"


def test_the_vendored_files_are_uplot_s_release_files():
    table = (STATIC / "VENDORED.md").read_text()
    for name in ("uPlot.iife.min.js", "uPlot.min.css", "uPlot.LICENSE"):
        (digest,) = re.findall(rf"\| `{re.escape(name)}` \|.*\| `([0-9a-f]{{64}})` \|", table)
        assert hashlib.sha256((STATIC / name).read_bytes()).hexdigest() == digest, name
    assert f"(v{UPLOT_VERSION})" in (STATIC / "uPlot.iife.min.js").read_text()[:200]
    assert f"| {UPLOT_VERSION} |" in table
    assert "MIT" in (STATIC / "uPlot.LICENSE").read_text()
    assert set(site_module.STATIC) <= {p.name for p in STATIC.iterdir()}


def test_each_compiler_repository_is_its_own_group_entries_recording_none_included(tmp_path):
    store = tmp_path / "store"
    publish_nights(store, tmp_path / "a", [[row(seed=i)] for i in range(3)])
    publish_nights(store, tmp_path / "b", [[row(median=30.0, seed=i)] for i in range(3)],
                   compiler_repo="git@github.com:flagos-ai/FlagTree.git")
    publish_nights(store, tmp_path / "c", [[row(median=40.0, seed=i)] for i in range(2)], compiler_repo=None)
    summary = build_site(store, tmp_path / "site", now=NOW)
    index = doc_of(tmp_path / "site" / "index.html")
    assert [g["repo"] for g in index["groups"]] == [None, "flagos-ai/FlagTree", "org/triton"]
    # the nightlies published without --compiler-repo are a history of their own, not damage
    assert [(g["entries"], g["damaged"]) for g in index["groups"]] == [(2, 0), (3, 0), (3, 0)]
    assert summary.pages == 3 and summary.rows == 3 and summary.entries == 8 and summary.damaged == 0
    for g, repo in ((0, "none"), (1, "flagos-ai/FlagTree"), (2, "org/triton")):
        (shown,) = [r for r in index["rows"] if r["g"] == g]
        (series,) = load_history(store, "h200", "pr", compiler_repo=repo).series
        assert shown["last"] == series.points[-1].median_us
    assert shown["last"] != [r for r in index["rows"] if r["g"] == 0][0]["last"]
    only_none = build_site(store, tmp_path / "site-none", compiler_repo="None", now=NOW)
    assert (only_none.groups, only_none.entries) == (1, 2)



def test_the_command_writes_the_site_and_names_bad_input(tmp_path, capsys):
    from tritongate.cli import main

    from tests.dashboard.helpers import make_store

    store, _entries = make_store(tmp_path / "s")
    assert main(["dashboard", "--store", str(store), "--out", str(tmp_path / "site")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == str(tmp_path / "site" / "index.html") and out[-2].startswith("dashboard: ")
    assert (tmp_path / "site" / "index.html").is_file()
    assert main(["dashboard", "--store", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ")


def test_the_nightly_step_builds_the_site_into_the_artifact_and_says_where(tmp_path):
    """ci/nightly_steps.sh dashboard, as the record-baseline action runs it after publishing."""
    import os
    import shutil
    import subprocess
    import sys

    from tests.dashboard.helpers import make_store

    store, _entries = make_store(tmp_path / "s")
    job = tmp_path / "job"
    job.mkdir()
    shutil.copytree(store, job / "baseline-store")
    summary = tmp_path / "summary.md"
    root = Path(__file__).resolve().parents[2]
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))},
           "PY": sys.executable, "RUNNER_TEMP": str(tmp_path / "temp"), "GITHUB_STEP_SUMMARY": str(summary),
           "TG_COMPILER_REPO": "org/triton", "TG_STORE_URL": "https://github.com/org/triton/tree/tritongate-baselines"}
    done = subprocess.run(["bash", str(root / "ci" / "nightly_steps.sh"), "dashboard"], cwd=job, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    index = tmp_path / "temp" / "tritongate" / "dashboard" / "index.html"
    assert index.is_file() and "github.com/org/triton/tree/tritongate-baselines" in "".join(
        p.read_text(errors="replace") for p in index.parent.rglob("*.html"))
    assert "`dashboard/index.html` in this run's nightly artifact" in summary.read_text()
