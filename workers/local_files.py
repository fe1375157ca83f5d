"""Which paths on this host the service may read and write for a run (ESCALATE_FILES_ROOT),
and reading and writing them so that they stay there.

A path is checked by where its links lead, but a check is only true when it is made: a
folder swapped for a link afterwards would carry the write elsewhere. So every read and
write below walks from the root's descriptor one folder at a time with O_NOFOLLOW and
works relative to the last folder's descriptor: a link met on the way is an error, never
a detour. Without roots, paths are used as named (links followed), as before.
"""

from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

from workflows.errors import PermanentError

# Wake fields that name a file the service writes on its own disk.
WRITTEN_FILES = (
    "blocked_file",
    "fallback_file",
    "command_file",
    "decision_file",
    "request_file",
)
FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


class OutsideRoot(PermanentError, OSError):
    """A run file's path leads outside ESCALATE_FILES_ROOT, or through a link on the way.
    An OSError too: every write path already treats a refused write as a failed one."""


def outside_roots(path: str, roots: Sequence[Path]) -> bool:
    """True when `roots` are set and `path`, links resolved, lies under none of them."""
    if not roots:
        return False
    try:
        real = Path(os.path.realpath(path))
    except OSError:  # a folder vanished while it was resolved: nothing to vouch for
        return True
    return not any(real.is_relative_to(root) for root in roots)


def refused_paths(fields: Mapping[str, Any], roots: Sequence[Path], *, prefix: str) -> list[str]:
    """A problem for each named file outside the allowed folders."""
    where = ":".join(str(root) for root in roots)
    return [
        f"{prefix}{key}: {value} is outside ESCALATE_FILES_ROOT ({where})"
        for key, value in fields.items()
        if isinstance(value, str) and value and outside_roots(value, roots)
    ]


@contextmanager
def folder(
    path: Path, roots: Sequence[Path] = (), *, resolve_name: bool = False
) -> Iterator[tuple[int, str]]:
    """A descriptor of the folder holding `path`, and the file's name in it.

    With `roots`, the folder is reached from the root that holds it, one component at a
    time, following no link; `resolve_name` first resolves a link in the name itself (for
    reading or appending to its target). OutsideRoot when it cannot be reached that way.
    """
    if not roots:
        fd = os.open(path.parent, FOLDER)
        try:
            yield fd, path.name
        finally:
            os.close(fd)
        return
    where = Path(os.path.realpath(path if resolve_name else path.parent))
    if resolve_name:
        where, name = where.parent, where.name
    else:
        name = path.name
    root = next((root for root in roots if where.is_relative_to(root)), None)
    if root is None or name in ("", ".", ".."):
        raise OutsideRoot(errno.EACCES, f"{path} is outside ESCALATE_FILES_ROOT")
    fd = os.open(root, FOLDER)
    try:
        for part in where.relative_to(root).parts:
            try:
                inner = os.open(part, FOLDER | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise OutsideRoot(
                        exc.errno,
                        f"{path}: {part} is no longer a folder under ESCALATE_FILES_ROOT "
                        "(a link is not followed)",
                    ) from None
                raise
            os.close(fd)
            fd = inner
        yield fd, name
    finally:
        os.close(fd)


def _open(name: str, flags: int, dir_fd: int, roots: Sequence[Path], path: Path) -> int:
    try:
        return os.open(name, flags | (os.O_NOFOLLOW if roots else 0), 0o666, dir_fd=dir_fd)
    except OSError as exc:
        if roots and exc.errno == errno.ELOOP:
            raise OutsideRoot(exc.errno, f"{path} is a link; not followed") from None
        raise


def write_atomically(path: Path, text: str, *, roots: Sequence[Path] = ()) -> None:
    """Readers see the old file or the new one, never half of it: a temporary file in the
    same folder, renamed over the name there."""
    with folder(path, roots) as (fd, name):
        temporary = f".{name}.{secrets.token_hex(4)}"
        out = os.open(
            temporary,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,  # as mkstemp made it
            dir_fd=fd,
        )
        try:
            with os.fdopen(out, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            with suppress(FileNotFoundError):
                os.unlink(temporary, dir_fd=fd)
            raise


@contextmanager
def open_for_append(path: Path, roots: Sequence[Path] = ()) -> Iterator[IO[str]]:
    """The file opened to read and append (created if missing), reached as `folder` does."""
    with folder(path, roots, resolve_name=True) as (fd, name):
        flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
        handle = os.fdopen(_open(name, flags, fd, roots, path), "a+", encoding="utf-8")
    with handle:
        yield handle


def read_bytes(path: Path, roots: Sequence[Path] = ()) -> bytes:
    """The file's bytes, reached as `folder` does; FileNotFoundError when it is absent."""
    with folder(path, roots, resolve_name=True) as (fd, name):
        handle = os.fdopen(_open(name, os.O_RDONLY | os.O_CLOEXEC, fd, roots, path), "rb")
    with handle:
        return handle.read()


def remove(path: Path, roots: Sequence[Path] = ()) -> None:
    """Remove the name (a link itself, never what it points at); absent is fine."""
    with folder(path, roots) as (fd, name), suppress(FileNotFoundError):
        os.unlink(name, dir_fd=fd)
