"""Reading a fingerprint never runs a program the run's repository names in its config."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from workers.probes import read_fingerprint


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("core.fsmonitor", "touch {marker}"),
        ("diff.external", "touch {marker}; true"),
    ],
)
def test_a_repositorys_own_programs_do_not_run(tmp_path: Path, key: str, value: str) -> None:
    repo, marker = tmp_path / "repo", tmp_path / "ran"
    git(tmp_path, "init", "-q", str(repo))
    (repo / "a.txt").write_text("one\n")
    git(repo, "add", "a.txt")
    git(repo, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "one")
    (repo / "a.txt").write_text("two\n")  # a change, so diff has something to show
    git(repo, "config", key, value.format(marker=marker))
    first = read_fingerprint({"kind": "git", "path": str(repo)})
    assert first and not marker.exists()
    (repo / "a.txt").write_text("three\n")
    assert read_fingerprint({"kind": "git", "path": str(repo)}) != first  # still sees changes
