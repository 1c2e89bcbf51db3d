"""Which compiler repository a baseline was built from, spelled any way git or GitHub spells it.

A store entry is only a baseline for PRs of its compiler's repository (FlagTree's records are
not Triton's, a fork's nightly is not upstream's). ``flagos-ai/FlagTree``,
``https://github.com/flagos-ai/FlagTree.git``, ``git@github.com:flagos-ai/flagtree`` and
``ssh://git@github.com/flagos-ai/FlagTree`` are one repository: the key drops GitHub's host,
any user or token, a trailing ``.git`` or ``/``, and letter case (GitHub names are
case-insensitive). Another host stays in the key: ``gitlab.com/org/triton`` is not ``org/triton``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from tritongate.baselines.manifest import BaselineError

GITHUB = "github.com"
_SEGMENT = re.compile(r"[A-Za-z0-9_.-]+\Z")
_SCP = re.compile(r"(?:[^@/:]+@)?(?P<host>[^@/:]+):(?P<path>[^/].*)\Z")  # git@host:owner/name
_SCHEMES = ("https", "http", "ssh", "git", "git+ssh", "ssh+git")


@dataclass(frozen=True)
class Repo:
    host: str  # lower case, GITHUB for owner/name
    path: str  # owner/name (more segments on other hosts), as spelled, no .git

    @property
    def key(self) -> str:
        """What two spellings of one repository share."""
        return self.display.lower()

    @property
    def display(self) -> str:
        """``owner/name`` on GitHub, ``host/path`` elsewhere; never a user or token."""
        return self.path if self.host == GITHUB else f"{self.host}/{self.path}"


def _refuse(text: str, why: str) -> BaselineError:
    return BaselineError(f"compiler repository {text[:120]!r}: {why}; name it OWNER/NAME (e.g. "
                         "flagos-ai/FlagTree) or by its clone URL")


def parse_repo(text: str) -> Repo:
    """The repository ``text`` names, or ``BaselineError`` (a usage error)."""
    raw = text.strip() if isinstance(text, str) else ""
    if not raw or not raw.isprintable() or " " in raw:
        raise _refuse(str(text), "expected one word")
    if "://" in raw:
        parts = urlsplit(raw)
        if parts.scheme.lower() not in _SCHEMES or not parts.hostname:
            raise _refuse(raw, f"a {parts.scheme or 'scheme-less'} URL is not a git remote")
        if parts.query or parts.fragment:
            raise _refuse(raw, "a URL with a query or fragment")
        host, path = parts.hostname.lower(), parts.path
    elif scp := _SCP.match(raw):
        host, path = scp.group("host").lower(), scp.group("path")
    else:
        segments = raw.strip("/").split("/")
        host, path = (segments[0].lower(), "/".join(segments[1:])) if len(segments) > 2 and "." in segments[0] \
            else (GITHUB, raw)
    if host in ("www.github.com", "ssh.github.com"):
        host = GITHUB
    path = path.strip("/")
    if path.lower().endswith(".git"):
        path = path[:-4]
    segments = path.split("/")
    if len(segments) < 2 or any(not _SEGMENT.match(s) or s in (".", "..") for s in segments):
        raise _refuse(raw, "expected OWNER/NAME")
    if host == GITHUB and len(segments) != 2:
        raise _refuse(raw, "a GitHub repository is exactly OWNER/NAME")
    return Repo(host, path)


def repo_of_ref(compiler_ref: str | None) -> Repo | None:
    """The repository of a run identity's ``compiler_ref`` when CI wrote it (``REPO@commit``,
    see ``TRITONGATE_COMPILER_REF``); None for ``triton 3.6.0`` and other names."""
    if not compiler_ref or "@" not in compiler_ref:
        return None
    try:
        return parse_repo(compiler_ref.rsplit("@", 1)[0])
    except BaselineError:
        return None
