"""No program named by a run's repository ever runs: not at snapshot, not at the close recheck.

Each trick below plants a program in a repository the way an agent could (its config, its
attributes, its hooks, a .git file pointing elsewhere); the program writes a marker file if
it ever runs. The fingerprint must still see every change in the tree.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.workers.conftest import Harness
from workers.answers import answer
from workers.probes import read_fingerprint
from workers.runtime import runtime_for
from workflows.errors import ProbeError
from workflows.examples import valid_packet

Plant = Callable[[Path, Path], None]


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def make_repo(root: Path) -> Path:
    """A repository with one commit, one tracked change and one untracked file."""
    repo = root / "repo"
    git(root, "init", "-q", str(repo))
    (repo / "a.txt").write_text("one\n")
    (repo / "b.bin").write_bytes(b"\x00\x01")
    git(repo, "add", "a.txt", "b.bin")
    git(repo, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "one")
    (repo / "a.txt").write_text("two\n")  # a change, so diff and status have work to do
    (repo / "new.txt").write_text("untracked\n")
    return repo


def program(root: Path, marker: Path) -> str:
    """An executable that leaves the marker when run, and passes its input through."""
    script = root / "evil.sh"
    script.write_text(f'#!/bin/sh\ntouch "{marker}"\ncat\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def config(*pairs: tuple[str, str]) -> Plant:
    def plant(repo: Path, marker: Path) -> None:
        evil = program(repo.parent, marker)
        for key, value in pairs:
            git(repo, "config", key, value.format(evil=evil, marker=marker))

    return plant


def with_attributes(line: str, *pairs: tuple[str, str]) -> Plant:
    def plant(repo: Path, marker: Path) -> None:
        (repo / ".gitattributes").write_text(line + "\n")
        config(*pairs)(repo, marker)

    return plant


def hook(name: str) -> Plant:
    def plant(repo: Path, marker: Path) -> None:
        hooks = repo / ".git" / "hooks"
        hooks.mkdir(exist_ok=True)
        target = hooks / name
        target.write_text(f'#!/bin/sh\ntouch "{marker}"\n')
        target.chmod(0o755)

    return plant


def hooks_path(repo: Path, marker: Path) -> None:
    elsewhere = repo.parent / "hooks"
    elsewhere.mkdir()
    for name in ("post-index-change", "reference-transaction", "post-checkout"):
        (elsewhere / name).write_text(f'#!/bin/sh\ntouch "{marker}"\n')
        (elsewhere / name).chmod(0o755)
    git(repo, "config", "core.hooksPath", str(elsewhere))


def include(kind: str) -> Plant:
    def plant(repo: Path, marker: Path) -> None:
        evil = program(repo.parent, marker)
        extra = repo.parent / "extra.gitconfig"
        extra.write_text(f'[core]\n\tfsmonitor = {evil}\n[filter "x"]\n\tclean = {evil}\n')
        (repo / ".gitattributes").write_text("* filter=x\n")
        if kind == "path":
            git(repo, "config", "include.path", str(extra))
        else:
            git(repo, "config", f"includeIf.gitdir:{repo}/.path", str(extra))

    return plant


def dot_git_file(repo: Path, marker: Path) -> None:
    """The work tree's .git is a file naming another repository, one with a filter planted."""
    other = repo.parent / "other.git"
    os.rename(repo / ".git", other)
    (repo / ".git").write_text(f"gitdir: {other}\n")
    evil = program(repo.parent, marker)
    git(repo, "config", "filter.x.clean", evil)
    (repo / ".gitattributes").write_text("* filter=x\n")


TRICKS: dict[str, Plant] = {
    "filter clean": with_attributes("* filter=x", ("filter.x.clean", "{evil}")),
    "filter smudge": with_attributes("* filter=x", ("filter.x.smudge", "{evil}")),
    "filter process": with_attributes("* filter=x", ("filter.x.process", "{evil}")),
    "diff textconv": with_attributes("* diff=x", ("diff.x.textconv", "{evil}")),
    "diff driver command": with_attributes("* diff=x", ("diff.x.command", "{evil}")),
    "external diff": config(("diff.external", "{evil}")),
    "fsmonitor": config(("core.fsmonitor", "{evil}")),
    "hooks folder": hook("post-index-change"),
    "core.hooksPath": hooks_path,
    "pager": config(("core.pager", "{evil}"), ("pager.status", "{evil}"), ("pager.diff", "{evil}")),
    "credential helper": config(("credential.helper", "!{evil}")),
    "ssh command": config(("core.sshCommand", "{evil}")),
    "aliases": config(("alias.status", "!{evil}"), ("alias.diff", "!{evil}")),
    "include.path": include("path"),
    "includeIf": include("if"),
    "askpass and editor": config(("core.askPass", "{evil}"), ("core.editor", "{evil}")),
    "gpg program": config(("gpg.program", "{evil}"), ("log.showSignature", "true")),
    "merge driver": with_attributes("* merge=x", ("merge.x.driver", "{evil}")),
}


@pytest.mark.parametrize("trick", sorted(TRICKS))
def test_no_planted_program_runs_and_changes_are_still_seen(tmp_path: Path, trick: str) -> None:
    # Given a run's repository with a program planted in it
    repo, marker = make_repo(tmp_path), tmp_path / "ran"
    TRICKS[trick](repo, marker)
    spec = {"kind": "git", "path": str(repo)}
    # When the snapshot reads the fingerprint, and again at the close recheck
    first = read_fingerprint(spec)
    again = read_fingerprint(spec)
    (repo / "a.txt").write_text("three\n")
    changed = read_fingerprint(spec)
    # Then nothing ran, the same tree reads the same, and a change is seen
    assert not marker.exists(), f"{trick}: the repository's program ran"
    assert first == again
    assert changed != first


def test_a_dot_git_file_pointing_elsewhere_is_refused_without_running(tmp_path: Path) -> None:
    repo, marker = make_repo(tmp_path), tmp_path / "ran"
    dot_git_file(repo, marker)
    with pytest.raises(ProbeError, match=r"a \.git file or link is not followed"):
        read_fingerprint({"kind": "git", "path": str(repo)})
    assert not marker.exists()


def test_a_dot_git_link_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    os.rename(repo / ".git", tmp_path / "real.git")
    (repo / ".git").symlink_to(tmp_path / "real.git")
    with pytest.raises(ProbeError, match=r"no \.git folder"):
        read_fingerprint({"kind": "git", "path": str(repo)})


def test_the_fingerprint_sees_what_git_status_sees(tmp_path: Path) -> None:
    # Given a clean checkout with an ignored build folder
    repo = make_repo(tmp_path)
    (repo / ".gitignore").write_text("build/\n*.log\n")
    spec = {"kind": "git", "path": str(repo)}
    base = read_fingerprint(spec)
    # Ignored output does not count
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_text("x")
    (repo / "run.log").write_text("x")
    assert read_fingerprint(spec) == base
    # A new untracked name, a deleted tracked file and a commit each do
    (repo / "more.txt").write_text("x")
    with_more = read_fingerprint(spec)
    assert with_more != base
    (repo / "b.bin").unlink()
    deleted = read_fingerprint(spec)
    assert deleted != with_more
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "two")
    committed = read_fingerprint(spec)
    assert committed != deleted
    assert committed and base and committed.split("+")[0] != base.split("+")[0]


def test_a_same_size_rewrite_in_the_same_instant_is_still_seen(tmp_path: Path) -> None:
    # Given a tracked file whose stat matches the index ("racily clean")
    repo = make_repo(tmp_path)
    git(repo, "add", "a.txt")
    spec = {"kind": "git", "path": str(repo)}
    first = read_fingerprint(spec)
    index_time = (repo / ".git" / "index").stat().st_mtime_ns
    # When the file is rewritten to the same size and its mtime put back
    (repo / "a.txt").write_text("TWO\n")
    os.utime(repo / "a.txt", ns=(index_time, index_time))
    # Then the new bytes are seen
    assert read_fingerprint(spec) != first


def test_an_index_naming_paths_outside_the_tree_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (tmp_path / "secret").write_text("outside\n")
    blob = subprocess.run(
        ["git", "-C", str(repo), "hash-object", "-w", str(tmp_path / "secret")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # git itself refuses "../secret", so write the entry past its checks
    subprocess.run(
        ["git", "-C", str(repo), "update-index", "--add", "--cacheinfo", f"100644,{blob},x/secret"],
        check=True,
    )
    index = (repo / ".git" / "index").read_bytes()
    (repo / ".git" / "index").write_bytes(index.replace(b"x/secret", b"../secr"))
    with pytest.raises(ProbeError):
        read_fingerprint({"kind": "git", "path": str(repo)})


def test_a_tracked_path_behind_a_link_is_not_read_through_it(tmp_path: Path) -> None:
    # Given a tracked folder replaced by a link to a folder outside the tree
    repo = make_repo(tmp_path)
    (repo / "d").mkdir()
    (repo / "d" / "f.txt").write_text("inside\n")
    git(repo, "add", "d/f.txt")
    spec = {"kind": "git", "path": str(repo)}
    first = read_fingerprint(spec)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("inside\n")  # the same bytes, so only a read-through hides
    (repo / "d" / "f.txt").unlink()
    (repo / "d").rmdir()
    (repo / "d").symlink_to(outside)
    # Then the tracked file reads as gone, as git status says, not as the outside copy
    assert read_fingerprint(spec) != first


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_nothing_runs_at_snapshot_or_at_close_through_the_workflow(
    service: Harness, tmp_path: Path
) -> None:
    # Given a run's repository carrying every config trick at once
    repo, marker = make_repo(tmp_path), tmp_path / "ran"
    for name, plant in TRICKS.items():
        if name not in ("include.path", "includeIf"):  # these replace the attributes file
            plant(repo, marker)
    include("path")(repo, marker)
    # When it escalates with its tree as the fingerprint, waits, and the tree changes
    service.send(
        {**valid_packet(), "packet_id": "esc-git-1"},
        snapshot={"verified": "tree", "fingerprint": {"kind": "git", "path": str(repo)}},
    )
    case = service.case("run-8842", "esc-git-1")
    service.in_state(case.id, "awaiting")
    assert not marker.exists(), "a program ran at the snapshot"
    (repo / "a.txt").write_text("changed while waiting\n")
    answer(runtime_for(service.app), case.id, option="approve", responder="ana", channel="test")
    # Then the close recheck sees the change, and nothing ran at either read
    closed = service.in_state(case.id, "closed")
    assert closed.outcome == "reconcile_first"
    assert not marker.exists(), "a program ran at the close recheck"
