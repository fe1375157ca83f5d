"""Run files are checked again when written: a link swapped in after intake leads nowhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from models.settings import Settings
from tests.workers.conftest import Harness
from workers.answers import answer
from workers.intake import accept
from workers.runtime import runtime_for
from workflows.examples import valid_packet


@pytest.fixture
def settings(settings: Settings, tmp_path: Path) -> Settings:
    (tmp_path / "runs").mkdir()
    return settings.model_copy(update={"files_root": str(tmp_path / "runs")})


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_decisions_log_linked_out_of_the_root_is_not_written(
    service: Harness, tmp_path: Path
) -> None:
    run = tmp_path / "runs" / "loop"
    run.mkdir()
    outside = tmp_path / "outside.log"
    outside.write_text("")
    runtime = runtime_for(service.app)
    blocked = run / "BLOCKED.md"
    blocked.write_text("# Blocked\n")
    request = {
        "packet": {**valid_packet(), "packet_id": "w-1"},
        "wake": {"blocked_file": str(blocked)},
    }
    case = accept(runtime, request)
    (run / "decisions.log").symlink_to(outside)  # after intake accepted the paths
    service.in_state(case.id, "awaiting", "followed_up")
    assert answer(runtime, case.id, option="approve", responder="op", channel="test").decided
    service.in_state(case.id, "closed")

    def refused(_session: object) -> bool:
        unblock = [d for d in service.deliveries(case.id) if d.purpose == "unblock"]
        return bool(unblock) and "outside ESCALATE_FILES_ROOT" in (unblock[0].last_error or "")

    service.wait(refused, what="the unblock refused at write time")
    assert outside.read_text() == "" and blocked.exists()
