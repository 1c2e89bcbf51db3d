"""The sticky verdict comment on a pull request (run by ``ci/post_comment.py``).

The verdict folder is an artifact of a job that ran the PR's code, so everything in it is
untrusted: ``verdict.md`` is never read; ``verdict.json`` is read bounded (a regular file
inside the folder, no symlink), validated by the package's model, and the comment is
rendered from it here (``tritongate.github.trusted``), every string escaped.
The PR number and head SHA come from the trusted ``workflow_run`` event; the PR is read
back and its current ``head.sha`` must equal the given SHA, so an artifact cannot steer the
comment onto another PR.

Steps: read and check the verdict; check the PR head; find the sticky comment (the first
comment by the bot login that starts with ``STICKY_MARKER`` and ends with this key's line
and the state line, never a marker or key line quoted inside the verdict; a human quoting
the marker is ignored); update it, or create one; then, when the verdict turned *worse* (``is_worse``,
against the state line this poster wrote last time, never the artifact), post a short extra
comment linking to the sticky one (an edit notifies nobody).

Stale (the PR head is no longer ``--head-sha``): nothing is posted and the outcome is
``stale``, not an error: a newer push superseded this run, and that push's own run posts
its verdict. (If every run reports stale, the workflow passes the wrong SHA: it must be
``github.event.workflow_run.head_sha``.) Exit codes: ``ci/post_comment.py --help``.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Literal

from tritongate.github.rest import GitHubClient, GitHubError

# Duplicated from tritongate.report.verdict_markdown (kept out of this module's imports); a test keeps them equal.
STICKY_MARKER = "<!-- tritongate-verdict -->"
STATE_PREFIX = "<!-- tritongate-state: "
STATE_SUFFIX = " -->"
NOTIFY_MARKER = "<!-- tritongate-notify -->"
KEY_PREFIX = "<!-- tritongate-key: "
DEFAULT_BOT_LOGIN = "github-actions[bot]"
DEFAULT_SERVER_URL = "https://github.com"
VERDICT_JSON = "verdict.json"
MAX_MARKDOWN_CHARS = 65_000  # plus the state line stays under GitHub's 65,536
MAX_JSON_BYTES = 64 * 1024 * 1024  # verdict.json holds every row; this only stops a runaway file
MAX_COUNT = 10**9
WRITE_PERMISSION = "pull-requests: write"

_SHA = re.compile(r"[0-9a-fA-F]{40}")
_PR = re.compile(r"[1-9][0-9]{0,9}")
_REPO = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/(?!\.\.?\Z)[A-Za-z0-9._-]{1,100}")  # not OWNER/. or OWNER/..
_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?")
_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_URL = re.compile(r"https?://[A-Za-z0-9.-]+(?::[0-9]{1,5})?/[A-Za-z0-9._~/%+=&?,;:@!$#-]*")


class VerdictInputError(ValueError):
    """Bad arguments or a malformed verdict folder (exit 2). One line, names the fix."""


# -- arguments ------------------------------------------------------------------------------
def _matched(pattern: re.Pattern[str], text: str, problem: str) -> str:
    if not pattern.fullmatch(text):
        raise VerdictInputError(problem)
    return text


def validate_pr(value: str | int) -> int:
    text = str(value).strip()
    return int(_matched(_PR, text, f"PR number {text[:40]!r} is not a positive integer"))


def validate_sha(value: str) -> str:
    text = value.strip()
    return _matched(_SHA, text, f"head SHA {text[:60]!r} is not 40 hex digits").lower()


def validate_repo(value: str) -> tuple[str, str]:
    text = value.strip()
    owner, name = _matched(_REPO, text, f"repository {text[:120]!r} is not OWNER/NAME").split("/")
    return owner, name


def pr_of_head(client: GitHubClient, repo: str, head_repo: str, head_branch: str, head_sha: str) -> int | None:
    """The open PR of ``repo`` whose head is ``head_branch`` of ``head_repo`` at ``head_sha``
    (a fork PR, which the workflow_run event does not list); None when there is none (or the
    fork is gone).
    ``VerdictInputError`` for a head that is not OWNER/NAME and a branch name."""
    import urllib.parse

    if not head_repo:  # the fork was deleted: no open PR can have its head there
        return None
    head_owner, _ = validate_repo(head_repo)
    if not head_branch or len(head_branch) > 255 or any(ch.isspace() or ord(ch) < 32 for ch in head_branch):
        raise VerdictInputError(f"head branch {head_branch[:60]!r} is not a branch name")
    head = urllib.parse.quote(f"{head_owner}:{head_branch}", safe=":")
    pulls = client.get_pages(f"/repos/{repo}/pulls?state=open&head={head}&per_page=100",
                             what=f"finding the open PR of {head_owner}:{head_branch}", permission="pull-requests: read")
    found = [p.get("number") for p in pulls if isinstance(p, dict) and isinstance(p.get("head"), dict)
             and p["head"].get("sha") == head_sha and type(p.get("number")) is int
             and ((p["head"].get("repo") or {}).get("full_name") or "").lower() == head_repo.lower()]
    return found[0] if len(found) == 1 else None


def validate_login(value: str) -> str:
    return _matched(_LOGIN, value.strip(), f"bot login {value[:60]!r} is not a GitHub login")


def validate_key(value: str) -> str:
    """The sticky comment's key (runner class and suite): one per key on a PR."""
    text = value.strip()
    return _matched(_KEY, text, f"key {text[:60]!r} is not a plain name (letters, digits, . _ -)") if text else text


# -- the verdict folder -----------------------------------------------------------------------
@dataclass(frozen=True)
class VerdictState:
    """What the poster compares between runs; only ints and bools it computed itself."""

    passed: bool
    regressed: int
    rejected: int

    def line(self) -> str:
        payload = json.dumps({"passed": self.passed, "regressed": self.regressed, "rejected": self.rejected})
        return STATE_PREFIX + payload + STATE_SUFFIX

    def describe(self) -> str:
        return f"{'passing' if self.passed else 'failing'}, {self.regressed} regressed, {self.rejected} rejected"


@dataclass(frozen=True)
class Verdict:
    markdown: str
    state: VerdictState
    headline: str


def _read_regular(folder: Path, name: str, max_bytes: int) -> bytes:
    """A regular file directly inside ``folder``, at most ``max_bytes``: no symlink (it could
    point anywhere on the runner), no FIFO or device (a read could hang)."""
    try:
        root = folder.resolve(strict=True)
    except OSError as exc:
        raise VerdictInputError(f"verdict folder {folder} cannot be read ({exc.strerror or exc})") from None
    if not root.is_dir():
        raise VerdictInputError(f"verdict folder {folder} is not a directory")
    path = root / name
    if path.is_symlink():
        raise VerdictInputError(f"{path} is a symlink; the verdict folder must hold plain files")
    if Path(os.path.realpath(path)).parent != root:
        raise VerdictInputError(f"{path} escapes the verdict folder")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise VerdictInputError(f"{path} cannot be opened ({exc.strerror or exc}); is this a verdict folder "
                                "written by `tritongate gate`?") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise VerdictInputError(f"{path} is not a regular file")
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise VerdictInputError(f"{path} is larger than {max_bytes} bytes")
    return data


def run_link(url: str | None, *, repo: str = "", server: str = DEFAULT_SERVER_URL,
             run_id: int | None = None) -> str | None:
    """The document's link to its run, kept only where it is a page of a run of ``repo`` on
    ``server`` (what ``gate_steps.sh pair`` writes: ``SERVER/OWNER/NAME/actions/runs/ID``, or
    an attempt or an artifact of it) and, with ``run_id``, of that run; None otherwise. verdict.json was
    written by a job that ran the PR's code: any other link would be the PR's, posted by the
    bot (a look-alike "Run directories" link to a phishing page)."""
    if not url or not repo:
        return None
    # as the gate job wrote it, `$GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID`
    # (the variable as it is, or without a trailing '/'); a re-run's page adds /attempts/N
    prefixes = {f"{base}/{repo}/actions/runs/" for base in (server, server.rstrip("/"))}
    rest = next((url[len(p):] for p in prefixes if url.startswith(p)), "")
    m = re.fullmatch(r"([0-9]{1,20})(?:/attempts/[0-9]{1,10}|/artifacts/[0-9]{1,20})?", rest)
    return url if m and (run_id is None or int(m.group(1)) == run_id) else None


def read_verdict(folder: str | Path, *, repo: str = "", server: str = DEFAULT_SERVER_URL,
                 run_id: int | None = None) -> Verdict:
    """The comment for a verdict folder, rendered here from its validated verdict.json
    (``tritongate.github.trusted``); verdict.md, written by the job that ran PR code, is
    never read. Its link to the run is kept only where ``run_link`` vouches for it."""
    from tritongate.github.trusted import UntrustedVerdictError, judge, parse_verdict_doc, render_comment_body

    folder = Path(folder)
    source = folder / VERDICT_JSON
    try:
        doc = parse_verdict_doc(_read_regular(folder, VERDICT_JSON, MAX_JSON_BYTES), str(source))
    except UntrustedVerdictError as exc:
        raise VerdictInputError(str(exc)) from None
    link = run_link(doc.artifact_url, repo=repo, server=server, run_id=run_id)
    if link != doc.artifact_url:
        doc = doc.model_copy(update={"artifact_url": link})
    try:  # the model checks types, not every value the renderer needs (a negative time, an inf count)
        j = judge(doc)
        markdown = render_comment_body(doc)
    except (ValueError, ArithmeticError) as exc:
        raise VerdictInputError(f"{source}: holds a value the gate never writes ({' '.join(str(exc).split())[:200]}); "
                                "is this a verdict folder written by `tritongate gate`?") from None
    if len(markdown) > MAX_MARKDOWN_CHARS:  # _fit keeps it under; this is the last line of defence
        raise VerdictInputError(f"{source}: the rendered comment has {len(markdown)} characters")
    state = VerdictState(passed=j.passed, regressed=min(j.regressed, MAX_COUNT), rejected=min(j.rejected, MAX_COUNT))
    headline = markdown.splitlines()[1].lstrip("#").strip()  # the heading's text, without its level
    return Verdict(markdown=markdown, state=state, headline=headline)


# -- bodies -----------------------------------------------------------------------------------
def key_line(key: str) -> str:
    return f"{KEY_PREFIX}{key} -->" if key else ""


def sticky_body(verdict: Verdict, key: str = "") -> str:
    """The rendered comment, the key line, and the state line last (this poster's own lines)."""
    tail = (key_line(key) + "\n" if key else "") + verdict.state.line() + "\n"
    return verdict.markdown.rstrip() + "\n\n" + tail


def parse_state(body: str) -> VerdictState | None:
    """The state line of a sticky comment this poster wrote (its last line), or None."""
    lines = body.rstrip().splitlines()
    last = lines[-1].strip() if lines else ""
    if not (last.startswith(STATE_PREFIX) and last.endswith(STATE_SUFFIX)):
        return None
    try:
        doc = json.loads(last[len(STATE_PREFIX):-len(STATE_SUFFIX)])
    except ValueError:
        return None
    if not (isinstance(doc, dict) and isinstance(doc.get("passed"), bool) and type(doc.get("regressed")) is int
            and type(doc.get("rejected")) is int):
        return None
    return VerdictState(passed=doc["passed"], regressed=doc["regressed"], rejected=doc["rejected"])


def is_worse(before: VerdictState | None, now: VerdictState) -> bool:
    """Passing before and failing now, or more REGRESSED rows, or more REJECTED rows. No previous
    state (no sticky yet, or no readable state line): nothing to compare, not worse (a newly
    created comment notifies by itself)."""
    if before is None:
        return False
    return (before.passed and not now.passed) or now.regressed > before.regressed or now.rejected > before.rejected


def inline_text(value: str, max_chars: int = 300) -> str:
    """Untrusted text made inert in Markdown, through the one escaping choke point."""
    from tritongate.report.untrusted import markdown_cell

    return markdown_cell(value, max_chars)


def notify_body(verdict: Verdict, before: VerdictState, sticky_url: str | None) -> str:
    """The short extra comment: the headline (escaped), what changed, and the link."""
    link = (f"[Full verdict]({sticky_url})" if sticky_url and _URL.fullmatch(sticky_url)
            else "The full verdict is in the tritongate comment above.")
    return (f"{NOTIFY_MARKER}\n**tritongate: the verdict got worse.** {inline_text(verdict.headline)}\n\n"
            f"Before: {before.describe()}; now: {verdict.state.describe()}. {link}\n")


# -- the PR and its comments --------------------------------------------------------------------
def sticky_key(body: str) -> str | None:
    """The key of a sticky comment this poster wrote ("" for an unkeyed one), read only where
    ``sticky_body`` puts its own lines: the marker first, the key line just above the state
    line at the end; None for any other body. The text between is the verdict's, an IR diff
    shown literally among it, so a key line or marker quoted there counts for nothing."""
    lines = body.rstrip().splitlines()
    if not lines or lines[0].strip() != STICKY_MARKER:
        return None
    tail = [line.strip() for line in lines[-2:]]
    keys = [t[len(KEY_PREFIX):-len(" -->")] for t in tail if t.startswith(KEY_PREFIX) and t.endswith(" -->")]
    return keys[-1] if keys else ""


def find_sticky(comments: Iterable[Any], bot_login: str, key: str = "") -> dict[str, Any] | None:
    """The first comment by ``bot_login`` that is a sticky of ``key`` (``sticky_key``; without
    a key, an unkeyed one); anyone else's is ignored (a human may quote the marker, and editing
    their comment is not ours to do)."""
    for c in comments:
        if not isinstance(c, dict) or type(c.get("id")) is not int or not isinstance(c.get("body"), str):
            continue
        user = c.get("user")
        login = user.get("login") if isinstance(user, dict) else None
        if isinstance(login, str) and login.casefold() == bot_login.casefold() and sticky_key(c["body"]) == key:
            return c
    return None


@dataclass(frozen=True)
class Target:
    owner: str
    name: str
    pr: int
    head_sha: str

    @property
    def repo(self) -> str:
        return f"{self.owner}/{self.name}"


def current_head(client: GitHubClient, target: Target) -> str:
    pull = client.get(f"/repos/{target.owner}/{target.name}/pulls/{target.pr}",
                      what=f"reading PR #{target.pr} of {target.repo}", permission="pull-requests: read")
    head = pull.get("head") if isinstance(pull, dict) else None
    sha = head.get("sha") if isinstance(head, dict) else None
    if not isinstance(sha, str) or not _SHA.fullmatch(sha):
        raise GitHubError(f"reading PR #{target.pr} of {target.repo}: the answer has no head.sha")
    return sha.lower()


Action = Literal["create", "update", "notify"]


@dataclass(frozen=True)
class Outcome:
    """What happened (or, in a dry run, would happen). ``status``: posted, dry-run or stale."""

    status: Literal["posted", "dry-run", "stale"]
    actions: tuple[Action, ...] = ()
    body: str = ""
    notify: str | None = None
    sticky_id: int | None = None
    sticky_url: str | None = None
    notify_url: str | None = None
    pr_head: str | None = None


def post_verdict(client: GitHubClient, target: Target, verdict: Verdict, *,
                 bot_login: str = DEFAULT_BOT_LOGIN, dry_run: bool = False, key: str = "") -> Outcome:
    """Check the PR head, then update or create the sticky comment and notify when worse.
    A dry run makes read requests only."""
    head = current_head(client, target)
    if head != target.head_sha:
        return Outcome(status="stale", pr_head=head)
    base = f"/repos/{target.owner}/{target.name}"
    comments = client.get_pages(f"{base}/issues/{target.pr}/comments?per_page=100",
                                what=f"listing the comments of PR #{target.pr}", permission="issues: read")
    sticky = find_sticky(comments, bot_login, key)
    body = sticky_body(verdict, key)
    before = parse_state(sticky["body"]) if sticky else None
    worse = is_worse(before, verdict.state)
    actions: tuple[Action, ...] = ("update" if sticky else "create",) + (("notify",) if worse else ())
    sticky_url = _html_url(sticky)
    if dry_run:
        note = notify_body(verdict, before, sticky_url) if worse and before else None
        return Outcome(status="dry-run", actions=actions, body=body, notify=note,
                       sticky_id=sticky["id"] if sticky else None, sticky_url=sticky_url)
    write = {"what": f"writing the verdict comment on PR #{target.pr}", "permission": WRITE_PERMISSION}
    if sticky:
        posted = client.patch(f"{base}/issues/comments/{sticky['id']}", {"body": body}, **write)
    else:
        posted = client.post(f"{base}/issues/{target.pr}/comments", {"body": body}, **write)
    sticky_url = _html_url(posted) or sticky_url
    sticky_id = posted.get("id") if isinstance(posted, dict) else None
    note, note_url = None, None
    if worse and before:
        note = notify_body(verdict, before, sticky_url)
        note_url = _html_url(client.post(f"{base}/issues/{target.pr}/comments", {"body": note},
                                         what=f"posting the 'verdict got worse' comment on PR #{target.pr}",
                                         permission=WRITE_PERMISSION))
    return Outcome(status="posted", actions=actions, body=body, notify=note,
                   sticky_id=sticky_id if type(sticky_id) is int else None, sticky_url=sticky_url,
                   notify_url=note_url)


def _html_url(comment: Any) -> str | None:
    url = comment.get("html_url") if isinstance(comment, dict) else None
    return url if isinstance(url, str) and _URL.fullmatch(url) else None
