"""A tiny GitHub REST client on ``urllib.request`` (standard library only).

Every failure is a ``GitHubError`` with one line that names the request and the fix; the
token is sent in the ``Authorization`` header only and is never part of a message. Links
(pagination, redirects) are followed only on the API's own origin, so the token never goes
to another host.
"""

from __future__ import annotations

import datetime as dt
import http.client
import json
import re
import time
import unicodedata
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from email.message import Message
from typing import Any, Callable, Iterator, Mapping

DEFAULT_API_URL = "https://api.github.com"
USER_AGENT = "tritongate-post-comment"
MAX_RESPONSE_BYTES = 32 * 1024 * 1024  # a page of 100 comments of 65,536 characters fits
MAX_PAGES = 200  # 20,000 comments: a loop guard, not a real limit
MAX_RETRY_WAIT_S = 60.0  # one retry after a rate limit only when it lifts this soon
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


class GitHubError(Exception):
    """A GitHub API request failed; the message is one line, without the token."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Response:
    status: int
    headers: Mapping[str, str]
    data: Any  # decoded JSON


def one_line(value: Any, limit: int = 200) -> str:
    """Text from a response or an exception for a message: one line, no control characters, bounded."""
    text = " ".join(str(value).split())
    text = "".join(ch for ch in text if unicodedata.category(ch) not in ("Cc", "Cf"))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def validate_api_url(url: str) -> str:
    """The API base without a trailing slash: https, or http on a loopback host only
    (a local stub), so the token never travels in clear text."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ValueError(f"API URL {one_line(url, 120)!r} is not an http(s) URL")
    if parts.scheme == "http" and parts.hostname not in _LOOPBACK:
        raise ValueError(f"API URL {one_line(url, 120)!r} is plain http: the token would travel unencrypted; use https")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise ValueError(f"API URL {one_line(url, 120)!r} must not carry credentials, a query or a fragment")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))


def _origin(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """urllib would resend the Authorization header to any host a redirect names."""

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> urllib.request.Request | None:
        if _origin(urllib.parse.urljoin(req.full_url, newurl)) != _origin(req.full_url):
            raise urllib.error.HTTPError(req.full_url, code, "redirect off the API host refused", headers, fp)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def next_link(link_header: str | None) -> str | None:
    """The ``rel="next"`` target of a ``Link`` header, if any."""
    for target, params in re.findall(r"<([^>]*)>\s*((?:;[^,<]*)*)", link_header or ""):
        rel = re.search(r';\s*rel\s*=\s*"?([^";]*)"?', params)
        if rel and "next" in rel.group(1).split():
            return str(target)
    return None


def _rate_limited(status: int, headers: Mapping[str, str]) -> bool:
    """429 always; 403 only with the rate-limit headers (otherwise it is a permission answer)."""
    return status == 429 or (status == 403 and (headers.get("x-ratelimit-remaining") == "0"
                                                or headers.get("retry-after") is not None))


def _int_header(headers: Mapping[str, str], name: str) -> int | None:
    value = (headers.get(name) or "").strip()
    return int(value) if value.isdigit() and len(value) < 16 else None


@dataclass
class GitHubClient:
    """``api_url`` is validated by ``validate_api_url``; ``token`` may be empty (anonymous reads).
    ``sleep`` and ``clock`` are injectable so that tests never wait."""

    api_url: str
    token: str = field(repr=False)
    timeout_s: float = 30.0
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time

    def __post_init__(self) -> None:
        self.api_url = validate_api_url(self.api_url)
        self._opener = urllib.request.build_opener(_SameOriginRedirects)

    # -- public calls -------------------------------------------------------------------
    def get(self, path: str, *, what: str, permission: str) -> Any:
        return self._call("GET", self.api_url + path, None, what=what, permission=permission).data

    def post(self, path: str, body: dict[str, Any], *, what: str, permission: str) -> Any:
        return self._call("POST", self.api_url + path, body, what=what, permission=permission).data

    def patch(self, path: str, body: dict[str, Any], *, what: str, permission: str) -> Any:
        return self._call("PATCH", self.api_url + path, body, what=what, permission=permission).data

    def delete(self, path: str, *, what: str, permission: str) -> Any:
        return self._call("DELETE", self.api_url + path, None, what=what, permission=permission).data

    def get_pages(self, path: str, *, what: str, permission: str) -> Iterator[Any]:
        """The items of a list endpoint, page after page (``Link: rel="next"``)."""
        url: str | None = self.api_url + path
        seen: set[str] = set()
        while url is not None:
            if len(seen) >= MAX_PAGES or url in seen:
                raise GitHubError(f"{what}: pagination did not end after {len(seen)} pages ({self._show(url)})")
            seen.add(url)
            resp = self._call("GET", url, None, what=what, permission=permission)
            if not isinstance(resp.data, list):
                raise GitHubError(f"{what}: GET {self._show(url)} answered {type(resp.data).__name__}, not a list")
            yield from resp.data
            url = self._checked_next(next_link(resp.headers.get("link")), what)

    # -- plumbing -----------------------------------------------------------------------
    def _checked_next(self, url: str | None, what: str) -> str | None:
        """Only a link under the API base (same origin and path prefix) gets the token."""
        if url is None:
            return None
        base = urllib.parse.urlsplit(self.api_url)
        parts = urllib.parse.urlsplit(url)
        if _origin(url) != _origin(self.api_url) or not parts.path.startswith(base.path + "/"):
            raise GitHubError(f"{what}: refusing to follow a pagination link off the API host "
                              f"({one_line(url, 120)}); the token would go with it")
        return url

    def _show(self, url: str) -> str:
        """A URL as messages show it: the path and query only."""
        parts = urllib.parse.urlsplit(url)
        return parts.path + (f"?{parts.query}" if parts.query else "")

    def _call(self, method: str, url: str, body: dict[str, Any] | None, *, what: str,
              permission: str) -> Response:
        resp = self._send(method, url, body, what)
        if _rate_limited(resp.status, resp.headers):
            wait = self._rate_limit_wait(resp.headers)
            if wait is not None and wait <= MAX_RETRY_WAIT_S:
                self.sleep(max(wait, 1.0))  # one bounded retry: a short secondary limit lifts by itself
                resp = self._send(method, url, body, what)
        if 200 <= resp.status < 300:
            return resp
        raise GitHubError(self._failure(method, url, resp, what, permission), status=resp.status)

    def _send(self, method: str, url: str, body: dict[str, Any] | None, what: str) -> Response:
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28",
                   "User-Agent": USER_AGENT, **({"Authorization": f"Bearer {self.token}"} if self.token else {}),
                   **({"Content-Type": "application/json"} if body is not None else {})}
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with self._opener.open(req, timeout=self.timeout_s) as raw:
                return self._response(raw.status, raw.headers, raw.read(MAX_RESPONSE_BYTES + 1), method, url, what)
        except urllib.error.HTTPError as exc:  # an answer, not a transport failure
            payload = exc.read(MAX_RESPONSE_BYTES + 1) if exc.fp is not None else b""
            return self._response(exc.code, exc.headers or Message(), payload, method, url, what, strict=False)
        except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise GitHubError(f"{what}: cannot reach the GitHub API at {urllib.parse.urlsplit(url).netloc} "
                              f"({method} {self._show(url)}): {one_line(reason)}") from None

    def _response(self, status: int, headers: Message, payload: bytes, method: str, url: str, what: str,
                  strict: bool = True) -> Response:
        lower = {k.lower(): v for k, v in headers.items()}
        if len(payload) > MAX_RESPONSE_BYTES:
            raise GitHubError(f"{what}: {method} {self._show(url)} answered more than {MAX_RESPONSE_BYTES} bytes")
        try:
            data = json.loads(payload.decode("utf-8")) if payload.strip() else None
        except (UnicodeDecodeError, ValueError, RecursionError):
            if strict:
                raise GitHubError(f"{what}: {method} {self._show(url)} answered {status} with a body "
                                  "that is not JSON") from None
            data = None  # an error page: the status says enough
        return Response(status=status, headers=lower, data=data)

    def _rate_limit_wait(self, headers: Mapping[str, str]) -> float | None:
        retry_after = _int_header(headers, "retry-after")
        if retry_after is not None:
            return float(retry_after)
        reset = _int_header(headers, "x-ratelimit-reset")
        return max(0.0, reset - self.clock()) if reset is not None else None

    def _failure(self, method: str, url: str, resp: Response, what: str, permission: str) -> str:
        said = resp.data.get("message") if isinstance(resp.data, dict) else None
        req = f"{method} {self._show(url)}"
        gh = f" ({resp.status}: {one_line(said)})" if said else f" ({resp.status})"
        if _rate_limited(resp.status, resp.headers):
            return f"{what}: GitHub API rate limit hit on {req}{gh}; {self._reset_text(resp.headers)}"
        if resp.status == 401:
            return (f"{what}: GitHub refused the token on {req}{gh}: GITHUB_TOKEN is missing, expired or wrong; "
                    "pass the job's own token (env GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}) and give the job "
                    "`permissions: pull-requests: write` (or `issues: write`)")
        if resp.status == 403:
            return (f"{what}: permission denied on {req}{gh}: the token lacks `{permission}`; add it under the "
                    "commenting job's `permissions:` (a PR comment also accepts `issues: write`); a fork PR's "
                    "own `pull_request` job only ever gets a read-only token, so post from the `workflow_run` job")
        if resp.status == 404:
            return (f"{what}: not found on {req}{gh}: the repository or pull request does not exist, "
                    "or the token cannot see it (check --repo and --pr)")
        if 300 <= resp.status < 400:
            return f"{what}: {req} was redirected off the API host{gh}; not followed (the token would go with it)"
        return f"{what}: GitHub answered {req}{gh}"

    def _reset_text(self, headers: Mapping[str, str]) -> str:
        retry_after = _int_header(headers, "retry-after")
        reset = _int_header(headers, "x-ratelimit-reset")
        if reset is not None:
            when = dt.datetime.fromtimestamp(reset, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
            return f"the limit resets at {when} (in {max(0, int(reset - self.clock()))} s); re-run the job then"
        if retry_after is not None:
            return f"GitHub asks to retry after {retry_after} s; re-run the job then"
        return "GitHub gave no reset time; re-run the job later"


def client_from_env(env: Mapping[str, str]) -> GitHubClient:
    """The client a CI step gets: ``GITHUB_API_URL`` (else api.github.com) and ``GITHUB_TOKEN``.
    ``ValueError`` for an API URL the token must not travel to (plain http, malformed)."""
    return GitHubClient(api_url=env.get("GITHUB_API_URL") or DEFAULT_API_URL, token=env.get("GITHUB_TOKEN", ""))
