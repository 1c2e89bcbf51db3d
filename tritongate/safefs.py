"""Reading files inside a root (a run directory, a store entry, an IR folder, a verdict folder)
without following a link out of it.

Those folders come from a PR, an artifact or a data branch: a symbolic link in one
(``ttgir/x.ttgir -> /etc/passwd``, ``entry/records -> ../../elsewhere``) would otherwise be
read as the folder's own content and inlined into a verdict or accepted as a store entry.
Every component below the root is opened with ``O_NOFOLLOW`` relative to its parent's
descriptor (``openat``), so a link anywhere on the path, file or directory, is refused and
named as a link (with its target), never followed and never called "missing". The root
itself is the folder the user named and may be a link. ``..`` and absolute parts are refused.

``LinkError`` is an ``OSError`` (errno ``ELOOP``) and a ``UsageError`` at once: a reader that
maps ``OSError`` to "cannot read X (why)" says "a symbolic link ..."; one that does not catch
it exits 2 with the message.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from tritongate.errors import UsageError

_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


class LinkError(UsageError, OSError):
    """A path inside a root that is, or passes through, a symbolic link (or leaves the root)."""

    def __init__(self, path: Path, detail: str) -> None:
        OSError.__init__(self, errno.ELOOP, detail, str(path))
        self.path = path
        self.detail = detail

    def __str__(self) -> str:
        return f"{self.path}: {self.detail}"


def _parts(rel: str | os.PathLike[str]) -> list[str]:
    parts = [p for p in PurePosixPath(os.fspath(rel)).parts if p not in ("", ".")]
    return parts


def _refuse_escape(root: Path, rel: str | os.PathLike[str]) -> list[str]:
    text = os.fspath(rel)
    parts = _parts(text)
    if os.path.isabs(text) or ".." in parts:
        raise LinkError(root / text, f"leaves {root} (an absolute path or '..'); files are read only inside it")
    return parts


def _link_detail(name: str, dir_fd: int, root: Path) -> str:
    try:
        target = os.readlink(name, dir_fd=dir_fd)
    except OSError:
        target = "?"
    return f"is a symbolic link (to {target!r}), not followed: files are read only inside {root}"


def _walk_to_parent(root: Path, parts: list[str]) -> int:
    """A descriptor of the directory holding ``parts[-1]``, every step taken without following
    a link; the caller closes it."""
    fd = os.open(root, _DIR_FLAGS & ~os.O_NOFOLLOW)  # the root the user named may be a link
    try:
        for i, name in enumerate(parts[:-1]):
            try:
                nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link_at(name, fd):
                    raise LinkError(root.joinpath(*parts[: i + 1]), _link_detail(name, fd, root)) from None
                raise type(exc)(exc.errno, exc.strerror, str(root.joinpath(*parts[: i + 1]))) from None
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def _is_link_at(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def open_in_root(root: Path, rel: str | os.PathLike[str]) -> BinaryIO:
    """``root/rel`` opened for reading (binary), or ``LinkError`` if it is or passes through a
    link, or the usual ``OSError`` (FileNotFoundError, IsADirectoryError...)."""
    root = Path(root)
    parts = _refuse_escape(root, rel)
    if not parts:
        raise IsADirectoryError(errno.EISDIR, "is a directory", str(root))
    fd = _walk_to_parent(root, parts)
    try:
        try:
            ffd = os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK) and _is_link_at(parts[-1], fd):
                raise LinkError(root.joinpath(*parts), _link_detail(parts[-1], fd, root)) from None
            raise type(exc)(exc.errno, exc.strerror, str(root.joinpath(*parts))) from None
    finally:
        os.close(fd)
    st = os.fstat(ffd)
    if stat.S_ISDIR(st.st_mode):
        os.close(ffd)
        raise IsADirectoryError(errno.EISDIR, "is a directory", str(root.joinpath(*parts)))
    if not stat.S_ISREG(st.st_mode):  # a FIFO or a device would block or never end
        os.close(ffd)
        raise LinkError(root.joinpath(*parts), "is not a regular file (a pipe or a device); refused")
    os.set_blocking(ffd, True)
    return os.fdopen(ffd, "rb")


def read_bytes(root: Path, rel: str | os.PathLike[str], *, limit: int | None = None) -> bytes:
    """The bytes of ``root/rel`` (at most ``limit + 1``, so a caller can tell "over the limit")."""
    with open_in_root(root, rel) as f:
        return f.read() if limit is None else f.read(limit + 1)


def read_text(root: Path, rel: str | os.PathLike[str], encoding: str = "utf-8") -> str:
    return read_bytes(root, rel).decode(encoding)


def kind(root: Path, rel: str | os.PathLike[str] = "") -> str:
    """What ``root/rel`` is, without following a link: ``file``, ``dir``, ``link`` (the entry
    itself or a directory on its way), ``other`` or ``missing``. An escaping path is ``link``."""
    root = Path(root)
    try:
        parts = _refuse_escape(root, rel)
    except LinkError:
        return "link"
    if not parts:
        return "dir" if root.is_dir() else "missing" if not root.exists() else "other"
    try:
        fd = _walk_to_parent(root, parts)
    except LinkError:
        return "link"
    except OSError:
        return "missing"
    try:
        mode = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False).st_mode
    except OSError:
        return "missing"
    finally:
        os.close(fd)
    return ("link" if stat.S_ISLNK(mode) else "file" if stat.S_ISREG(mode) else "dir" if stat.S_ISDIR(mode)
            else "other")


def check_inside(root: Path, path: Path) -> Path:
    """``path`` (a file or folder under ``root``, as a reader composed it) when no component
    below ``root`` is a link; raises ``LinkError`` naming the link otherwise. For readers that
    hand a path to a library: the check and the later open are not atomic, but what is
    checked is the folder the reader was given, not a race against its own writer."""
    root, path = Path(root), Path(path)
    try:
        rel = path.relative_to(root)
    except ValueError:
        raise LinkError(path, f"is not inside {root}; files are read only inside it") from None
    parts = _refuse_escape(root, rel)
    for i in range(len(parts)):
        here = root.joinpath(*parts[: i + 1])
        if here.is_symlink():
            raise LinkError(here, f"is a symbolic link (to {os.readlink(here)!r}), not followed: files are read "
                                  f"only inside {root}")
    return path
