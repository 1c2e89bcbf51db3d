"""The sticky-comment poster against a local stub of the GitHub REST API (127.0.0.1, port 0).

Every test asserts on the stub's recorded requests (method, path, JSON body) and on the
CLI's exit code and output; the token never appears in any output."""

from __future__ import annotations

import re

import importlib.util
import json
import os
import subprocess
import sys
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tritongate.github.comment import (
    NOTIFY_MARKER, STICKY_MARKER, VerdictState, inline_text, is_worse, parse_state, validate_pr, validate_sha,
)
from tritongate.github.rest import next_link

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "ci" / "post_comment.py"
TOKEN = "ghs_TopSecretToken1234567890abcdef"
SHA = "a" * 40
OTHER_SHA = "b" * 40
BOT = "github-actions[bot]"
PR = 7


def _load_cli():
    spec = importlib.util.spec_from_file_location("post_comment_cli", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CLI = _load_cli()


# -- the stub ---------------------------------------------------------------------------------
@dataclass
class Req:
    method: str
    path: str  # with the query
    auth: str | None
    body: Any


@dataclass
class Stub:
    url: str = ""
    head_sha: str = SHA
    comments: list[dict[str, Any]] = field(default_factory=list)
    page_size: int = 2
    requests: list[Req] = field(default_factory=list)
    # (METHOD, path without query) -> answers to give first, in order: (status, headers, body)
    scripted: dict[tuple[str, str], list[tuple[int, dict[str, str], Any]]] = field(default_factory=dict)
    next_link_host: str | None = None  # a Link header pointing elsewhere
    next_id: int = 9000

    @property
    def writes(self) -> list[Req]:
        return [r for r in self.requests if r.method != "GET"]

    def comment(self, login: str, body: str) -> dict[str, Any]:
        self.next_id += 1
        c = {"id": self.next_id, "body": body, "user": {"login": login},
             "html_url": f"https://github.com/o/r/pull/{PR}#issuecomment-{self.next_id}"}
        self.comments.append(c)
        return c

    def answer(self, method: str, raw_path: str, body: Any) -> tuple[int, dict[str, str], Any]:
        parts = urllib.parse.urlsplit(raw_path)
        path, query = parts.path, urllib.parse.parse_qs(parts.query)
        if self.scripted.get((method, path)):
            return self.scripted[(method, path)].pop(0)
        if method == "GET" and path == f"/repos/o/r/pulls/{PR}":
            return 200, {}, {"number": PR, "head": {"sha": self.head_sha}}
        if method == "GET" and path in (f"/repos/o/r/issues/{PR}/comments", f"/repositories/42/issues/{PR}/comments"):
            return self._page(int(query.get("page", ["1"])[0]))
        if method == "POST" and path == f"/repos/o/r/issues/{PR}/comments":
            return 201, {}, self.comment(BOT, body["body"])
        if method == "PATCH" and path.startswith("/repos/o/r/issues/comments/"):
            for c in self.comments:
                if c["id"] == int(path.rsplit("/", 1)[1]):
                    c["body"] = body["body"]
                    return 200, {}, c
        return 404, {}, {"message": "Not Found"}

    def _page(self, page: int) -> tuple[int, dict[str, str], Any]:
        start = (page - 1) * self.page_size
        items = self.comments[start:start + self.page_size]
        headers = {}
        if start + self.page_size < len(self.comments):
            host = self.next_link_host or self.url
            # GitHub's own next links name the repository by id, not by OWNER/NAME
            headers["Link"] = (f'<{host}/repositories/42/issues/{PR}/comments?per_page=100&page={page + 1}>; '
                               f'rel="next", <{host}/repositories/42/issues/{PR}/comments?page=99>; rel="last"')
        return 200, headers, items


class _Handler(BaseHTTPRequestHandler):
    def _serve(self) -> None:
        stub: Stub = self.server.stub  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        stub.requests.append(Req(self.command, self.path, self.headers.get("Authorization"), body))
        status, headers, payload = stub.answer(self.command, self.path, body)
        data = json.dumps(payload).encode()
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = _serve

    def log_message(self, *args: Any) -> None:  # keep pytest output clean
        pass


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch):
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def stub():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    s = Stub(url=f"http://127.0.0.1:{server.server_address[1]}")
    server.stub = s  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield s
    server.shutdown()
    server.server_close()


# -- helpers ----------------------------------------------------------------------------------
def verdict_dir(tmp_path: Path, *, passed: bool = True, regressed: int = 0, rejected: int = 0,
                headline: str = "✅ no regressions (3 unchanged)", markdown: str | None = None,
                rows: list[dict[str, Any]] | None = None) -> Path:
    """A verdict folder as the gate job uploads it. Its verdict.md is hostile on purpose: the
    poster must never post it (the comment is rendered from verdict.json)."""
    d = tmp_path / "verdict"
    d.mkdir(exist_ok=True)
    md = markdown if markdown is not None else f"{STICKY_MARKER}\n## ✅ all good @everyone ![x](http://x)\n"
    (d / "verdict.md").write_text(md, encoding="utf-8")
    if rows is None:
        rows = ([_row("REGRESSED", i) for i in range(regressed)] + [_row("REJECTED", i) for i in range(rejected)]
                + [_row("UNCHANGED", i) for i in range(3)])
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    doc = {"schema_version": 3, "passed": passed, "headline": headline, "exit_code": 0 if passed else 1,
           "counts": counts, "base": {"path": "b"}, "candidate": {"path": "c"}, "rows": rows}
    (d / "verdict.json").write_text(json.dumps(doc), encoding="utf-8")
    return d


def _row(verdict: str, i: int, **extra: Any) -> dict[str, Any]:
    return {"op": f"op{i}", "case": "4096", "dtype": "float16", "verdict": verdict,
            "base_median_us": 10.0, "cand_median_us": 12.0 if verdict == "REGRESSED" else 10.0, **extra}


def rendered(folder: Path) -> str:
    from tritongate.github.comment import read_verdict

    return read_verdict(folder).markdown


def state_line(passed: bool, regressed: int, rejected: int) -> str:
    return VerdictState(passed, regressed, rejected).line()


def run(capsys, stub: Stub, folder: Path, *extra: str, sha: str = SHA, env: dict[str, str] | None = None,
        sleeps: list[float] | None = None) -> tuple[int, str, str]:
    argv = ["--verdict-dir", str(folder), "--repo", "o/r", "--pr", str(PR), "--head-sha", sha,
            "--api-url", stub.url, *extra]
    sleep = (sleeps.append if sleeps is not None else _no_sleep)
    code = CLI.main(argv, env={"GITHUB_TOKEN": TOKEN} if env is None else env, sleep=sleep)
    out, err = capsys.readouterr()
    assert TOKEN not in out and TOKEN not in err
    return code, out, err


def _no_sleep(seconds: float) -> None:
    raise AssertionError(f"slept {seconds} s")


def gets(stub: Stub) -> list[str]:
    return [urllib.parse.urlsplit(r.path).path for r in stub.requests if r.method == "GET"]


# -- pure pieces ------------------------------------------------------------------------------
def test_sticky_marker_equals_the_renderers():
    from tritongate.report.verdict_markdown import STICKY_MARKER as rendered

    assert STICKY_MARKER == rendered


@pytest.mark.parametrize("text", ["@everyone look", "fixes #12", "see https://evil.example/x", "[a](b) **c** `d`",
                                  "<img src=x onerror=y>", "a_b _c_ www.x.org", "bidi\u202eevil\u200b", "x" * 400])
def test_inline_text_escapes_like_the_markdown_renderer(text):
    from tritongate.report.untrusted import markdown_cell

    assert inline_text(text) == markdown_cell(text, 300)


def test_the_import_chain_has_no_heavy_modules():
    code = ("import importlib.util, sys\n"
            f"spec = importlib.util.spec_from_file_location('pc', {str(SCRIPT)!r})\n"
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
            "heavy = sorted({n.split('.')[0] for n in sys.modules} & "
            "{'torch', 'triton', 'pandas', 'numpy', 'scipy', 'rich', 'requests'})\n"
            "assert not heavy, heavy\n"
            "assert 'tritongate.gate' not in sys.modules and 'tritongate.report' not in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT / "ci"))
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("before, now, worse", [
    (None, VerdictState(False, 5, 5), False),  # nothing to compare with
    (VerdictState(True, 0, 0), VerdictState(False, 0, 0), True),  # pass -> fail
    (VerdictState(False, 1, 0), VerdictState(False, 2, 0), True),  # more regressed
    (VerdictState(False, 0, 1), VerdictState(False, 0, 2), True),  # more rejected
    (VerdictState(False, 2, 0), VerdictState(False, 1, 1), True),  # fewer regressed, more rejected
    (VerdictState(False, 2, 1), VerdictState(False, 2, 1), False),  # the same
    (VerdictState(False, 2, 1), VerdictState(False, 1, 0), False),  # better
    (VerdictState(False, 1, 0), VerdictState(True, 0, 0), False),  # fixed
    (VerdictState(True, 0, 0), VerdictState(True, 0, 0), False),
])
def test_what_worse_means(before, now, worse):
    assert is_worse(before, now) is worse


def test_the_state_line_is_read_only_from_the_last_line():
    line = state_line(False, 2, 0)
    assert line == '<!-- tritongate-state: {"passed": false, "regressed": 2, "rejected": 0} -->'
    assert parse_state(f"{STICKY_MARKER}\nbody\n\n{line}\n") == VerdictState(False, 2, 0)
    assert parse_state(f"{STICKY_MARKER}\n{line}\nmore text after it\n") is None  # planted by the artifact
    assert parse_state('<!-- tritongate-state: {"passed": 1, "regressed": 2, "rejected": 0} -->') is None
    assert parse_state('<!-- tritongate-state: {"passed": true, "regressed": true, "rejected": 0} -->') is None
    assert parse_state("<!-- tritongate-state: nope -->") is None


def test_next_link_parsing():
    header = ('<https://api.github.com/x?page=3>; rel="last", <https://api.github.com/x?page=2>; rel="next", '
              '<https://api.github.com/x?page=1>; rel="first"')
    assert next_link(header) == "https://api.github.com/x?page=2"
    assert next_link('<https://api.github.com/x?page=1>; rel="prev"') is None
    assert next_link(None) is None


def test_argument_validators():
    assert validate_pr(" 12\n") == 12
    assert validate_sha("A" * 40) == "a" * 40
    for bad in ("0", "-3", "+3", "1e3", "12abc", "", "99999999999"):
        with pytest.raises(ValueError):
            validate_pr(bad)
    for bad in ("a" * 39, "g" * 40, "a" * 41, "HEAD"):
        with pytest.raises(ValueError):
            validate_sha(bad)


# -- create / update / notify -----------------------------------------------------------------
def test_creates_the_sticky_after_reading_every_page_and_ignoring_a_human_quote(capsys, stub, tmp_path):
    stub.comment("alice", "nice PR")
    stub.comment("bob", f"why does it say\n> {STICKY_MARKER}\n{state_line(True, 0, 0)}")  # a human quoting it
    stub.comment(BOT, "some other bot comment")
    stub.comment("carol", "lgtm")
    stub.comment("dave", "ship it")  # 5 comments, 2 a page: 3 pages
    folder = verdict_dir(tmp_path, passed=False, regressed=2, headline="❌ gate failed")
    code, out, err = run(capsys, stub, folder)
    assert code == 0, err
    assert gets(stub) == [f"/repos/o/r/pulls/{PR}", f"/repos/o/r/issues/{PR}/comments",
                          f"/repositories/42/issues/{PR}/comments", f"/repositories/42/issues/{PR}/comments"]
    assert stub.requests[1].path.endswith("?per_page=100")
    md = rendered(folder)
    assert [(r.method, r.path, r.body) for r in stub.writes] == [
        ("POST", f"/repos/o/r/issues/{PR}/comments",
         {"body": md.rstrip() + "\n\n" + state_line(False, 2, 0) + "\n"})]
    assert all(r.auth == f"Bearer {TOKEN}" for r in stub.requests)
    assert stub.comments[1]["body"].startswith("why does it say")  # the human's comment is untouched
    assert out.startswith("posted: created https://github.com/o/r/pull/7#issuecomment-")


def test_updates_the_bots_sticky_found_on_a_later_page(capsys, stub, tmp_path):
    stub.comment("alice", f"{STICKY_MARKER} quoted by a human")
    stub.comment("bob", "hm")
    sticky = stub.comment(BOT, f"{STICKY_MARKER}\nold verdict\n\n{state_line(True, 0, 0)}\n")
    folder = verdict_dir(tmp_path)
    code, out, err = run(capsys, stub, folder)
    assert code == 0, err
    assert [(r.method, r.path) for r in stub.writes] == [("PATCH", f"/repos/o/r/issues/comments/{sticky['id']}")]
    assert stub.writes[0].body == {"body": rendered(folder).rstrip() + "\n\n"
                                   + state_line(True, 0, 0) + "\n"}
    assert out.strip() == f"posted: updated {sticky['html_url']}"


def test_a_verdict_that_turned_worse_also_posts_a_short_notifying_comment(capsys, stub, tmp_path):
    sticky = stub.comment(BOT, f"{STICKY_MARKER}\nold\n\n{state_line(True, 0, 0)}\n")
    folder = verdict_dir(tmp_path, passed=False, regressed=1, headline="❌ gate failed @everyone see #1")
    code, out, err = run(capsys, stub, folder)
    assert code == 0, err
    assert [(r.method, r.path) for r in stub.writes] == [
        ("PATCH", f"/repos/o/r/issues/comments/{sticky['id']}"), ("POST", f"/repos/o/r/issues/{PR}/comments")]
    note = stub.writes[1].body["body"]
    assert note.startswith(NOTIFY_MARKER) and STICKY_MARKER not in note  # never mistaken for the sticky
    assert f"[Full verdict]({sticky['html_url']})" in note
    assert "@everyone" not in note and "#1" not in note and "❌ 1 regression" in note and "&#35;" not in note
    assert "Before: passing, 0 regressed, 0 rejected; now: failing, 1 regressed, 0 rejected." in note
    assert "notified: the verdict got worse (https://github.com/o/r/pull/7#issuecomment-" in out


@pytest.mark.parametrize("before, now", [
    (VerdictState(False, 2, 1), VerdictState(False, 2, 1)),  # the same
    (VerdictState(False, 2, 1), VerdictState(False, 1, 0)),  # better
    (VerdictState(False, 1, 0), VerdictState(True, 0, 0)),  # fixed
])
def test_no_extra_comment_when_the_verdict_got_better_or_stayed(capsys, stub, tmp_path, before, now):
    sticky = stub.comment(BOT, f"{STICKY_MARKER}\nold\n\n{before.line()}\n")
    folder = verdict_dir(tmp_path, passed=now.passed, regressed=now.regressed, rejected=now.rejected)
    code, out, err = run(capsys, stub, folder)
    assert code == 0, err
    assert [(r.method, r.path) for r in stub.writes] == [("PATCH", f"/repos/o/r/issues/comments/{sticky['id']}")]
    assert "notified" not in out


def test_a_state_line_planted_in_verdict_md_cannot_fake_the_previous_state(capsys, stub, tmp_path):
    # the first run's artifact plants a "regressed: 99" line; the poster's own line comes after it
    planted = f"{STICKY_MARKER}\n## x\n{state_line(False, 99, 99)}\n"
    folder = verdict_dir(tmp_path, passed=False, regressed=1, markdown=planted)
    assert run(capsys, stub, folder)[0] == 0
    folder = verdict_dir(tmp_path, passed=False, regressed=2, markdown=planted)
    assert run(capsys, stub, folder)[0] == 0
    assert [r.method for r in stub.writes] == ["POST", "PATCH", "POST"]  # 1 -> 2 regressed: worse
    assert stub.writes[2].body["body"].startswith(NOTIFY_MARKER)


# -- refusals ---------------------------------------------------------------------------------
def test_a_superseded_head_is_skipped_as_stale_without_writing(capsys, stub, tmp_path):
    stub.head_sha = OTHER_SHA
    code, out, err = run(capsys, stub, verdict_dir(tmp_path))
    assert code == 0, err
    assert out.startswith(f"stale: PR #{PR}'s head is now {OTHER_SHA}, this verdict is for {SHA}")
    assert [(r.method, urllib.parse.urlsplit(r.path).path) for r in stub.requests] == [
        ("GET", f"/repos/o/r/pulls/{PR}")]


def test_dry_run_prints_the_actions_and_bodies_and_writes_nothing(capsys, stub, tmp_path):
    sticky = stub.comment(BOT, f"{STICKY_MARKER}\nold\n\n{state_line(True, 0, 0)}\n")
    folder = verdict_dir(tmp_path, passed=False, regressed=3)
    code, out, err = run(capsys, stub, folder, "--dry-run")
    assert code == 0, err
    assert stub.writes == []
    assert out.splitlines()[0] == f"dry-run: would update + notify comment {sticky['id']} on o/r#{PR}"
    assert state_line(False, 3, 0) in out and NOTIFY_MARKER in out
    code, out, _ = run(capsys, stub, folder, "--dry-run", env={"GITHUB_ACTIONS": "true"})  # no token: anonymous
    assert code == 0 and stub.writes == [] and stub.requests[-1].auth is None
    stop = out.splitlines()[2]
    assert stop.startswith("::stop-commands::") and f"::{stop.split('::')[2]}::" in out  # the body cannot run commands


def test_dry_run_without_a_sticky_would_create(capsys, stub, tmp_path):
    code, out, _ = run(capsys, stub, verdict_dir(tmp_path), "--dry-run")
    assert code == 0 and out.startswith(f"dry-run: would create on o/r#{PR}") and stub.writes == []


@pytest.mark.parametrize("case", ["symlink", "fifo", "no json", "json not json", "json list", "not utf-8",
                                  "passed string", "schema too new", "no schema", "unknown verdict", "rows missing",
                                  "median a string", "median negative", "median -1e308", "effect a huge int"])
def test_a_malformed_verdict_folder_exits_2_before_any_request(capsys, stub, tmp_path, case):
    folder = verdict_dir(tmp_path)
    js = folder / "verdict.json"
    doc = json.loads(js.read_text())
    if case == "symlink":
        secret = tmp_path / "secret.json"
        secret.write_text(js.read_text())
        js.unlink()
        js.symlink_to(secret)
    elif case == "fifo":
        js.unlink()
        os.mkfifo(js)
    elif case == "no json":
        js.unlink()
    elif case == "json not json":
        js.write_text("{nope")
    elif case == "json list":
        js.write_text("[]")
    elif case == "not utf-8":
        js.write_bytes(b'{"passed": "\xff"}')
    else:
        if case == "passed string":
            doc["passed"] = "yes"
        elif case == "schema too new":
            doc["schema_version"] = 99
        elif case == "no schema":
            del doc["schema_version"]
        elif case == "unknown verdict":
            doc["rows"][0]["verdict"] = "LGTM"
        elif case == "rows missing":
            del doc["rows"]
        elif case == "median a string":
            doc["rows"][0]["base_median_us"] = "10"
        elif case == "median negative":  # valid to the model, refused by the renderer: input, not a bug
            doc["rows"][0]["base_median_us"] = -5.0
        elif case == "median -1e308":
            doc["rows"][0]["cand_median_us"] = -1e308
        elif case == "effect a huge int":
            doc["rows"][0]["effect"] = 10**400
        js.write_text(json.dumps(doc))
    code, out, err = run(capsys, stub, folder)
    assert code == 2, (out, err)
    assert err.startswith("error: post_comment.py: ") and err.count("\n") == 1
    assert stub.requests == []


def test_a_verdict_with_thousands_of_rows_fits_the_comment_limit(capsys, stub, tmp_path):
    rows = [_row("REGRESSED", i, why="x" * 150) for i in range(3000)]
    code, _, err = run(capsys, stub, verdict_dir(tmp_path, passed=False, rows=rows))
    assert code == 0, err
    body = stub.writes[0].body["body"]
    assert len(body) < 65_536 and re.search(r"… \d+ more rows? not shown", body)


def test_verdict_md_is_never_posted(capsys, stub, tmp_path):
    folder = verdict_dir(tmp_path, markdown=f"{STICKY_MARKER}\nFORGED ✅ @org/team ![i](http://x)\n")
    code, _, err = run(capsys, stub, folder)
    assert code == 0, err
    body = stub.writes[0].body["body"]
    assert "FORGED" not in body and "@org" not in body and "![i]" not in body
    assert body.startswith(STICKY_MARKER + "\n## ") and "✅" in body.splitlines()[1]  # the shared renderer's headline


RUN_PAGE = "https://github.com/o/r/actions/runs/99"


@pytest.mark.parametrize("url, extra, env, linked", [
    (RUN_PAGE, [], {}, True),                                   # what gate_steps.sh pair writes
    (RUN_PAGE + "/artifacts/5", ["--run-id", "99"], {}, True),
    (RUN_PAGE + "/attempts/2", ["--run-id", "99"], {}, True),  # a re-run's page (github.run_attempt)
    (RUN_PAGE + "/attempts/2/x", [], {}, False),
    ("https://github.com/o/r/actions/runs/100/attempts/2", ["--run-id", "99"], {}, False),
    ("https://ghes.acme.example/git/o/r/actions/runs/99", [], {"GITHUB_SERVER_URL": "https://ghes.acme.example/git"},
     True),                                                     # an Enterprise Server under a path prefix
    ("https://ghes.acme.example//o/r/actions/runs/99", [], {"GITHUB_SERVER_URL": "https://ghes.acme.example/"},
     True),                                                     # "$GITHUB_SERVER_URL/..." with its trailing '/'
    ("https://ghes.acme.example/o/r/actions/runs/99", [], {"GITHUB_SERVER_URL": "https://ghes.acme.example/"}, True),
    ("https://evil.example/o/r/actions/runs/99", [], {}, False),  # the PR's own site, posted by the bot
    ("https://github.com/evil/r/actions/runs/99", [], {}, False),  # another repository's run
    ("https://github.com/o/r/actions/runs/99.evil.example/x", [], {}, False),
    ("https://github.com/o/r/pull/7/files", [], {}, False),
    (RUN_PAGE, ["--run-id", "100"], {}, False),                 # not the run that is being posted
    ("https://ghes.acme.example/o/r/actions/runs/99", [], {"GITHUB_SERVER_URL": "https://ghes.acme.example"}, True),
    (RUN_PAGE, [], {"GITHUB_SERVER_URL": "https://ghes.acme.example"}, False),
    ("javascript:alert(1)", [], {}, False),                     # not even https: dropped, not a crash (exit 4)
])
def test_the_comment_links_only_a_run_page_of_the_repository(capsys, stub, tmp_path, url, extra, env, linked):
    """verdict.json comes from a job that ran the PR's code: its artifact_url would be a link
    the bot posts, so only a run page of --repo (of --run-id, when given) is kept."""
    folder = verdict_dir(tmp_path)
    js = folder / "verdict.json"
    js.write_text(json.dumps({**json.loads(js.read_text()), "artifact_url": url}))
    code, out, err = run(capsys, stub, folder, *extra, env={"GITHUB_TOKEN": TOKEN, **env})
    assert code == 0, (out, err)
    body = stub.writes[0].body["body"]
    assert ("Run directories" in body and f"]({url})" in body) is linked
    if not linked:
        assert "evil" not in body and "javascript" not in body and "](http" not in body


@pytest.mark.parametrize("args, env, needle", [
    (["--pr", "0"], None, "PR number '0' is not a positive integer"),
    (["--pr", "7; rm -rf /"], None, "is not a positive integer"),
    (["--head-sha", "abc"], None, "is not 40 hex digits"),
    (["--repo", "o"], None, "is not OWNER/NAME"),
    (["--api-url", "http://example.com"], None, "plain http"),
    (["--run-id", "12; ls"], None, "is not a run id"),
    ([], {}, "GITHUB_TOKEN is not set"),
    ([], {"GITHUB_TOKEN": "two words"}, "GITHUB_TOKEN holds whitespace"),
    (["--bogus"], None, "unrecognized arguments: --bogus"),
])
def test_bad_usage_exits_2_with_one_error_line(capsys, stub, tmp_path, args, env, needle):
    code, out, err = run(capsys, stub, verdict_dir(tmp_path), *args, env=env)
    assert code == 2 and needle in err and err.startswith("error: ") and err.count("\n") == 1, err
    assert stub.requests == []


# -- GitHub failures --------------------------------------------------------------------------
def test_a_403_on_writing_names_the_missing_permission(capsys, stub, tmp_path):
    stub.scripted[("POST", f"/repos/o/r/issues/{PR}/comments")] = [
        (403, {}, {"message": f"Resource not accessible by integration {TOKEN}"})]  # even an echoed token
    code, out, err = run(capsys, stub, verdict_dir(tmp_path))
    assert code == 5 and out == ""
    assert err.startswith("error: post_comment.py: writing the verdict comment on PR #7: permission denied")
    assert "`pull-requests: write`" in err and "`issues: write`" in err and "workflow_run" in err
    assert err.count("\n") == 1


def test_a_401_says_the_token_is_wrong(capsys, stub, tmp_path):
    stub.scripted[("GET", f"/repos/o/r/pulls/{PR}")] = [(401, {}, {"message": "Bad credentials"})]
    code, _, err = run(capsys, stub, verdict_dir(tmp_path))
    assert code == 5 and "GitHub refused the token" in err and "pull-requests: write" in err


def test_a_rate_limit_says_when_it_resets(capsys, stub, tmp_path):
    reset = 4_102_444_800  # 2100-01-01: far away, so no retry
    stub.scripted[("GET", f"/repos/o/r/pulls/{PR}")] = [
        (403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)}, {"message": "API rate limit exceeded"})]
    code, out, err = run(capsys, stub, verdict_dir(tmp_path), sleeps=[])
    assert code == 5 and out == ""
    assert "rate limit hit on GET /repos/o/r/pulls/7" in err and "resets at 2100-01-01 00:00:00 UTC" in err
    assert "permission" not in err and stub.writes == []


def test_a_short_retry_after_is_waited_once_then_retried(capsys, stub, tmp_path):
    stub.scripted[("POST", f"/repos/o/r/issues/{PR}/comments")] = [
        (429, {"retry-after": "7"}, {"message": "secondary rate limit"})]
    sleeps: list[float] = []
    code, out, err = run(capsys, stub, verdict_dir(tmp_path), sleeps=sleeps)
    assert code == 0, err
    assert sleeps == [7.0]
    assert [r.method for r in stub.writes] == ["POST", "POST"] and len(stub.comments) == 1


def test_a_second_rate_limit_after_the_retry_fails(capsys, stub, tmp_path):
    limited = (403, {"retry-after": "2"}, {"message": "secondary rate limit"})
    stub.scripted[("GET", f"/repos/o/r/pulls/{PR}")] = [limited, limited]
    sleeps: list[float] = []
    code, _, err = run(capsys, stub, verdict_dir(tmp_path), sleeps=sleeps)
    assert code == 5 and sleeps == [2.0] and "retry after 2 s" in err


def test_a_missing_pr_is_not_found(capsys, stub, tmp_path):
    stub.scripted[("GET", f"/repos/o/r/pulls/{PR}")] = [(404, {}, {"message": "Not Found"})]
    code, _, err = run(capsys, stub, verdict_dir(tmp_path))
    assert code == 5 and "reading PR #7 of o/r: not found" in err


def test_a_pagination_link_off_the_api_host_is_not_followed(capsys, stub, tmp_path):
    for i in range(3):
        stub.comment("alice", f"c{i}")
    stub.next_link_host = "https://evil.example"
    code, _, err = run(capsys, stub, verdict_dir(tmp_path))
    assert code == 5 and "refusing to follow a pagination link off the API host" in err
    assert stub.writes == []


def test_an_unreachable_api_is_one_line(capsys, stub, tmp_path):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    stub.url = f"http://127.0.0.1:{port}"
    code, _, err = run(capsys, stub, verdict_dir(tmp_path))
    assert code == 5 and f"cannot reach the GitHub API at 127.0.0.1:{port}" in err and err.count("\n") == 1


# -- the script itself --------------------------------------------------------------------------
def _script(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if "proxy" not in k.lower() and not k.startswith("GITHUB_")}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env={**clean, **env})


def test_help_documents_the_exit_codes():
    proc = _script("--help", env={})
    assert proc.returncode == 0
    for needle in ("exit codes:", "0  posted", "2  bad usage", "5  GitHub API failure", "pull-requests: write"):
        assert needle in proc.stdout


def test_the_script_posts_with_the_env_api_url(stub, tmp_path):
    proc = _script("--verdict-dir", str(verdict_dir(tmp_path)), "--repo", "o/r", "--pr", str(PR),
                   "--head-sha", SHA, env={"GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": stub.url})
    assert proc.returncode == 0, proc.stderr
    assert TOKEN not in proc.stdout + proc.stderr
    assert [(r.method, r.path) for r in stub.writes] == [("POST", f"/repos/o/r/issues/{PR}/comments")]


def test_a_bug_in_the_poster_is_exit_4_never_1(capsys, stub, tmp_path, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError(f"unexpected state near {TOKEN}")
    monkeypatch.setattr(CLI, "post_verdict", boom)
    code, out, err = run(capsys, stub, verdict_dir(tmp_path))
    assert code == 4 and out == ""
    assert err.startswith("error: post_comment.py: internal error (a bug): RuntimeError") and err.count("\n") == 1


def test_each_key_has_its_own_sticky_and_an_unkeyed_one_is_left_alone(capsys, stub, tmp_path):
    unkeyed = stub.comment(BOT, f"{STICKY_MARKER}\nold\n\n{state_line(True, 0, 0)}\n")
    folder = verdict_dir(tmp_path)
    assert run(capsys, stub, folder, "--key", "acme-h200-pr")[0] == 0
    assert run(capsys, stub, folder, "--key", "acme-mi300-pr")[0] == 0
    assert run(capsys, stub, folder, "--key", "acme-h200-pr")[0] == 0
    assert [(r.method, r.path.rsplit("/", 1)[-1]) for r in stub.writes] == [
        ("POST", "comments"), ("POST", "comments"), ("PATCH", str(stub.comments[1]["id"]))]
    assert "tritongate-key: acme-h200-pr" in stub.comments[1]["body"]
    assert stub.comments[0] is unkeyed and "tritongate-key" not in unkeyed["body"]
    code, _, err = run(capsys, stub, folder, "--key", "a b")
    assert code == 2 and "not a plain name" in err


# -- a fork PR: found from the event's head, never from the artifact --------------------------
def _open_pulls(*pulls: tuple[int, str, str]) -> list[dict[str, Any]]:
    """GET /repos/{o}/{r}/pulls?state=open&head=OWNER:BRANCH, as documented: number, head.sha, head.repo."""
    return [{"number": n, "head": {"sha": sha, "ref": "fix-1", "repo": {"full_name": repo}}} for n, sha, repo in pulls]


def test_a_fork_pr_is_found_from_the_event_s_head_repository_branch_and_sha(capsys, stub, tmp_path):
    stub.scripted[("GET", "/repos/o/r/pulls")] = [(200, {}, _open_pulls((99, OTHER_SHA, "someone/r"),
                                                                         (PR, SHA, "someone/r")))]
    folder = verdict_dir(tmp_path)
    argv = ["--verdict-dir", str(folder), "--repo", "o/r", "--head-repo", "someone/r", "--head-branch", "fix-1",
            "--head-sha", SHA, "--api-url", stub.url]
    assert CLI.main(argv, env={"GITHUB_TOKEN": TOKEN}, sleep=_no_sleep) == 0
    listing = stub.requests[0].path
    assert listing.startswith("/repos/o/r/pulls?") and "head=someone:fix-1" in listing and "state=open" in listing
    assert [r.path for r in stub.writes] == [f"/repos/o/r/issues/{PR}/comments"]


@pytest.mark.parametrize("pulls", [(), ((PR, OTHER_SHA, "someone/r"),), ((PR, SHA, "mallory/r"),),
                                   ((PR, SHA, "someone/r"), (8, SHA, "someone/r"))])
def test_no_single_open_pr_at_that_head_posts_nothing(capsys, stub, tmp_path, pulls):
    stub.scripted[("GET", "/repos/o/r/pulls")] = [(200, {}, _open_pulls(*pulls))]
    argv = ["--verdict-dir", str(verdict_dir(tmp_path)), "--repo", "o/r", "--head-repo", "someone/r",
            "--head-branch", "fix-1", "--head-sha", SHA, "--api-url", stub.url]
    assert CLI.main(argv, env={"GITHUB_TOKEN": TOKEN}, sleep=_no_sleep) == 0
    assert "nothing posted" in capsys.readouterr().out and stub.writes == []


def test_a_deleted_fork_has_no_open_pr():
    """workflow_run.head_repository is null once the fork is deleted: nothing to post, no crash."""
    from tritongate.github.comment import pr_of_head

    assert pr_of_head(None, "o/r", "", "fix-1", SHA) is None  # type: ignore[arg-type]


def test_a_key_line_quoted_inside_a_verdict_cannot_take_another_key_s_sticky(capsys, stub, tmp_path):
    """An IR diff is shown literally (a code block): a compiler's output that holds another
    runner class's key line (or the marker) must not make that class's poster update this
    comment, nor an unkeyed poster skip its own."""
    forged = "\n".join([STICKY_MARKER, "<!-- tritongate-key: acme-mi300-pr -->", "<!-- tritongate-key: x -->"])
    doc = json.loads((ROOT / "tests" / "report" / "golden" / "fail_regressions_ir.verdict.json").read_text())
    doc["rows"][0]["ir"]["head"] = forged
    h200 = tmp_path / "h200"
    h200.mkdir()
    (h200 / "verdict.json").write_text(json.dumps(doc))
    mi300 = verdict_dir(tmp_path)
    assert run(capsys, stub, h200, "--key", "acme-h200-pr")[0] == 0
    assert "tritongate-key: acme-mi300-pr" in stub.comments[0]["body"]  # shown, as the compiler wrote it
    assert run(capsys, stub, mi300, "--key", "acme-mi300-pr")[0] == 0
    assert run(capsys, stub, mi300)[0] == 0  # unkeyed: the h200 sticky is not its own either
    assert [(r.method, r.path.rsplit("/", 1)[-1]) for r in stub.writes] == [("POST", "comments")] * 3
    assert "tritongate-key: acme-h200-pr -->\n<!-- tritongate-state" in stub.comments[0]["body"]
