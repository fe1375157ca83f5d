"""A git work tree's fingerprint, read from its files without running git or anything it names.

A run's repository is untrusted: its config and attributes can name programs (filters,
textconv, fsmonitor, hooks, diff drivers, pagers, credential helpers, ssh commands, aliases),
and any git porcelain may run them. So nothing here starts a process: dulwich parses HEAD,
the refs and the index, and the tracked files' bytes are hashed as they lie on disk.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from dulwich.errors import NotGitRepository
from dulwich.ignore import IgnoreFilter, IgnoreFilterManager, read_ignore_patterns
from dulwich.index import ConflictedIndexEntry, IndexEntry, read_index_dict
from dulwich.refs import HEADREF, DiskRefsContainer

from workflows.errors import ProbeError

GITLINK = 0o160000  # a submodule's entry: its commit, not files of this tree
NO_HEAD = "0" * 40


def git_fingerprint(work_tree: str) -> str:
    """`<HEAD sha>+<16 hex of the tree digest>`; it changes when any tracked file's bytes,
    the set of tracked files, or the set of untracked, unignored names changes."""
    top = Path(work_tree)
    control = top / ".git"
    # A .git file (worktree, submodule) or link can point anywhere: only a real folder is read.
    if control.is_symlink() or not control.is_dir():
        raise ProbeError(f"{work_tree} has no .git folder (a .git file or link is not followed)")
    head = _head(control)
    index = _index(control)
    digest = hashlib.sha256()
    for path, blob_id in _tree_entries(top, control, index):
        digest.update(path + b"\0" + blob_id + b"\n")
    return f"{head}+{digest.hexdigest()[:16]}"


def _head(control: Path) -> str:
    try:
        _chain, sha = DiskRefsContainer(str(control)).follow(HEADREF)
    except (NotGitRepository, OSError, ValueError, KeyError) as exc:
        raise ProbeError(f"cannot read HEAD: {type(exc).__name__}") from None
    return sha.decode("ascii") if sha else NO_HEAD  # an unborn branch has no commit yet


def _index(control: Path) -> dict[bytes, IndexEntry | ConflictedIndexEntry]:
    path = control / "index"
    if not path.exists():
        return {}
    try:
        with _open_nofollow(path) as handle:
            return read_index_dict(handle)
    except (OSError, ValueError, AssertionError) as exc:
        raise ProbeError(f"cannot read the index: {type(exc).__name__}") from None


def _tree_entries(
    top: Path, control: Path, index: dict[bytes, IndexEntry | ConflictedIndexEntry]
) -> Iterator[tuple[bytes, bytes]]:
    """(path, blob id or a marker) for every tracked path, then every untracked name, sorted."""
    ignore = _ignore_rules(top, control)
    on_disk = dict(_walk(top, tracked_dirs=_parent_dirs(index), ignore=ignore))
    index_mtime_ns = (control / "index").stat().st_mtime_ns if index else 0
    for path in sorted(index):
        if not _is_plain_relative(path):
            raise ProbeError(f"the index names an unsafe path {path[:80]!r}")
        entry = index[path]
        if isinstance(entry, ConflictedIndexEntry):
            yield path, b"conflicted"
            continue
        if entry.mode == GITLINK:
            yield path, entry.sha
            continue
        found = on_disk.get(path)
        yield (
            path,
            b"deleted" if found is None else _blob_id(top, path, found, entry, index_mtime_ns),
        )
    for path in sorted(set(on_disk) - set(index)):
        if not ignore.is_ignored(os.fsdecode(path)):
            yield path, b"untracked"


def _blob_id(
    top: Path, path: bytes, found: os.stat_result, entry: IndexEntry, index_mtime_ns: int
) -> bytes:
    # Like git, trust the index's hash while the file's stat still matches it, unless the
    # file was touched in the same instant the index was written ("racily clean").
    mtime_ns = _ns(entry.mtime)
    if (
        found.st_size == entry.size
        and found.st_mtime_ns == mtime_ns
        and stat.S_IFMT(found.st_mode) == stat.S_IFMT(entry.mode)
        and mtime_ns < index_mtime_ns
    ):
        return entry.sha
    full = top / os.fsdecode(path)
    if stat.S_ISLNK(found.st_mode):
        target = os.fsencode(os.readlink(full))
        return _git_blob_id(len(target), [target])
    with _open_nofollow(full) as handle:
        size = os.fstat(handle.fileno()).st_size
        return _git_blob_id(size, iter(lambda: handle.read(1 << 20), b""))


def _git_blob_id(size: int, chunks: Iterable[bytes]) -> bytes:
    """git's object id for these bytes as a blob, hashed in chunks so a large file is not held."""
    blob = hashlib.sha1(b"blob %d\0" % size, usedforsecurity=False)
    for chunk in chunks:
        blob.update(chunk)
    return blob.hexdigest().encode()


def _walk(
    top: Path, *, tracked_dirs: set[bytes], ignore: IgnoreFilterManager
) -> Iterator[tuple[bytes, os.stat_result]]:
    """Regular files and links under top, as relative paths; never follows a link, never
    enters .git, and skips an ignored folder (build output, caches) unless it holds a
    tracked file."""
    stack = [b""]
    root = os.fsencode(top)
    while stack:
        rel = stack.pop()
        try:
            entries = list(os.scandir(os.path.join(root, rel) if rel else root))
        except OSError:
            continue
        for item in entries:
            name = item.name
            path = rel + b"/" + name if rel else name
            if name == b".git":
                continue
            try:
                info = item.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                if path in tracked_dirs or not ignore.is_ignored(os.fsdecode(path) + "/"):
                    stack.append(path)
            elif stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
                yield path, info


def _parent_dirs(index: dict[bytes, IndexEntry | ConflictedIndexEntry]) -> set[bytes]:
    dirs: set[bytes] = set()
    for path in index:
        parts = path.split(b"/")[:-1]
        for depth in range(1, len(parts) + 1):
            dirs.add(b"/".join(parts[:depth]))
    return dirs


def _ignore_rules(top: Path, control: Path) -> IgnoreFilterManager:
    """The tree's .gitignore files and .git/info/exclude; no global config is consulted."""
    shared: list[IgnoreFilter] = []
    exclude = control / "info" / "exclude"
    try:
        with _open_nofollow(exclude) as handle:
            shared.append(IgnoreFilter(read_ignore_patterns(handle), False, str(exclude)))
    except OSError:
        pass
    return IgnoreFilterManager(str(top), shared, False)


def _is_plain_relative(path: bytes) -> bool:
    parts = path.split(b"/")
    return (
        bool(path)
        and not path.startswith(b"/")
        and all(part not in (b"", b".", b"..", b".git") for part in parts)
    )


def _open_nofollow(path: Path) -> BinaryIO:
    return os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb")


def _ns(value: int | float | tuple[int, int]) -> int:
    if isinstance(value, tuple):
        return value[0] * 1_000_000_000 + value[1]
    return int(value * 1_000_000_000)
