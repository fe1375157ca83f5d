"""Run files are reached from the root's descriptor with no link followed: a folder that
became a link after its path was checked is an error, a link that stays inside still works."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from workers.local_files import OutsideRoot, remove
from workers.unblock import unblock, write_command_file


@pytest.fixture
def stale_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """Paths resolve as they were when checked: each folder was still a folder then."""
    monkeypatch.setattr(os.path, "realpath", os.path.abspath)


@pytest.mark.parametrize("what", ["DECISION.md", "decisions.log", "command file", "BLOCKED.md"])
def test_a_folder_that_became_a_link_after_the_check_is_not_followed(
    tmp_path: Path, stale_check: None, what: str
) -> None:
    # Given a run folder that was checked, then swapped for a link to a folder outside
    root, outside = tmp_path / "runs", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "BLOCKED.md").write_text("not the run's\n")
    (root / "loop").symlink_to(outside)
    loop = root / "loop"
    payload = {
        "escalation_id": "c1",
        "blocked_file": str(loop / "BLOCKED.md"),
        "decision_file": str(loop / "DECISION.md"),
        "decisions_log": str(loop / "decisions.log"),
        "decision_md": "# Decision\n",
        "log_line": "c1\tapprove",
    }
    # When the service writes there
    with pytest.raises(OutsideRoot, match="a link is not followed"):
        if what == "command file":
            write_command_file(loop / "command.json", {"command": "reset"}, roots=(root,))
        elif what == "BLOCKED.md":
            remove(loop / "BLOCKED.md", (root,))
        else:
            unblock(payload, (root,))
    # Then nothing outside was read, written or removed
    assert sorted(p.name for p in outside.iterdir()) == ["BLOCKED.md"]


def test_a_link_that_stays_inside_the_root_is_still_followed(tmp_path: Path) -> None:
    # Given a run whose decisions.log is a link to a log elsewhere under the root
    root = tmp_path / "runs"
    (root / "loop").mkdir(parents=True)
    (root / "logs").mkdir()
    (root / "loop" / "decisions.log").symlink_to(root / "logs" / "all.log")
    # When the case unblocks
    blocked = root / "loop" / "BLOCKED.md"
    payload = {
        "escalation_id": "c1",
        "blocked_file": str(blocked),
        "decision_file": str(root / "loop" / "DECISION.md"),
        "decisions_log": str(root / "loop" / "decisions.log"),
        "decision_md": "# Decision\n",
        "log_line": "c1\tapprove",
    }
    assert unblock(payload, (root,)) is None
    # Then the line is in the log the link names, and the link is still a link
    assert (root / "logs" / "all.log").read_text() == "c1\tapprove\n"
    assert (root / "loop" / "decisions.log").is_symlink()
