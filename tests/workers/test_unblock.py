"""Unblocking on the run's disk (SPEC §5): decision first, one log line per case, then removal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from workers.unblock import unblock
from workflows.blocked_file import render_blocked, unblock_paths
from workflows.examples import valid_packet

CASE_ID = "3f2a9c1b7d4e"
LINE = f"2026-10-16T09:30:00+00:00\t{CASE_ID}\tapprove\tresume\tana"


def payload(folder: Path, escalation_id: str = CASE_ID, line: str = LINE) -> dict[str, Any]:
    blocked = folder / "BLOCKED.md"
    decision_file, decisions_log = unblock_paths(str(blocked))
    return {
        "escalation_id": escalation_id,
        "blocked_file": str(blocked),
        "decision_file": decision_file,
        "decisions_log": decisions_log,
        "decision_md": f"# Decision\n\n- Case: {escalation_id}\n",
        "log_line": line,
    }


def block(folder: Path, escalation_id: str | None = CASE_ID) -> Path:
    path = folder / "BLOCKED.md"
    path.write_text(render_blocked(valid_packet(), (), escalation_id=escalation_id), "utf-8")
    return path


def test_given_the_cases_blocked_file_then_it_is_replaced_by_the_decision(tmp_path: Path) -> None:
    blocked = block(tmp_path)
    assert unblock(payload(tmp_path)) is None
    assert not blocked.exists()
    assert (tmp_path / "DECISION.md").read_text() == f"# Decision\n\n- Case: {CASE_ID}\n"
    assert (tmp_path / "decisions.log").read_text() == LINE + "\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["DECISION.md", "decisions.log"]


def test_running_it_twice_logs_once(tmp_path: Path) -> None:
    block(tmp_path)
    unblock(payload(tmp_path))
    unblock(payload(tmp_path))
    assert (tmp_path / "decisions.log").read_text() == LINE + "\n"


def test_each_case_gets_its_own_line_after_earlier_ones(tmp_path: Path) -> None:
    log = tmp_path / "decisions.log"
    log.write_text("an older line without a newline", "utf-8")
    unblock(payload(tmp_path))
    other = LINE.replace(CASE_ID, "000000000000")
    unblock(payload(tmp_path, "000000000000", other))
    assert log.read_text().splitlines() == ["an older line without a newline", LINE, other]


@pytest.mark.parametrize("written_for", ["000000000000", None])
def test_a_blocked_file_of_another_case_stays_and_so_does_its_decision(
    tmp_path: Path, written_for: str | None
) -> None:
    # Given BLOCKED.md of another case (or of a filing that failed), and an earlier DECISION.md
    blocked = block(tmp_path, written_for)
    (tmp_path / "DECISION.md").write_text("earlier decision", "utf-8")
    # When this case's decision arrives
    note = unblock(payload(tmp_path))
    # Then nothing the other case's loop waits on changes; the decision is still logged
    assert note is not None and "not this case's BLOCKED.md" in note
    assert blocked.exists()
    assert (tmp_path / "DECISION.md").read_text() == "earlier decision"
    assert (tmp_path / "decisions.log").read_text() == LINE + "\n"


def test_a_file_that_is_not_a_blocked_file_is_never_removed(tmp_path: Path) -> None:
    precious = tmp_path / "BLOCKED.md"
    precious.write_text(f"my notes about {CASE_ID}\n", "utf-8")
    assert unblock(payload(tmp_path)) is not None
    assert precious.read_text() == f"my notes about {CASE_ID}\n"


def test_a_folder_that_is_gone_is_an_os_error_to_retry(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        unblock(payload(tmp_path / "gone"))
