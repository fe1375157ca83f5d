"""Run files stay under ESCALATE_FILES_ROOT even when a folder is swapped for a link while
they are written (issue #14, item 3): checked, then swapped, then written must not escape."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlmodel import Session, col, select

from models.settings import Settings
from models.tables import Delivery
from tests.workers.conftest import Harness
from workers.answers import answer
from workers.intake import accept
from workers.runtime import runtime_for
from workflows.examples import valid_packet

CASES = 50
FILE_DELIVERIES = ("unblock", "command_file")


@pytest.fixture
def settings(settings: Settings, tmp_path: Path) -> Settings:
    (tmp_path / "runs" / "loop").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    return settings.model_copy(update={"files_root": str(tmp_path / "runs")})


@contextmanager
def swapping(folder: Path, outside: Path) -> Iterator[list[int]]:
    """A thread that swaps `folder` for a link to `outside` and back, continuously, until
    the block ends (with the folder in place); yields the count of swaps."""
    spare = folder.with_name(f"{folder.name}.spare")
    stop, swaps = threading.Event(), [0]

    def swap() -> None:
        while not stop.is_set():
            os.rename(folder, spare)
            os.symlink(outside, folder)
            os.sched_yield()  # leave the link in place for a moment
            os.unlink(folder)
            os.rename(spare, folder)
            swaps[0] += 1
            time.sleep(0.002)  # and the folder for longer, so most writes can go ahead

    thread = threading.Thread(target=swap, daemon=True)
    thread.start()
    try:
        yield swaps
    finally:
        stop.set()
        thread.join(timeout=10)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_no_file_lands_outside_the_root_while_a_folder_is_swapped_for_a_link(
    service: Harness, tmp_path: Path
) -> None:
    # Given 50 shell-loop cases whose run files are in runs/loop, each with a command file
    runtime = runtime_for(service.app)
    loop, outside = tmp_path / "runs" / "loop", tmp_path / "outside"
    ids = []
    for number in range(CASES):
        packet = {
            **valid_packet(),
            "packet_id": f"race-{number}",
            "blocked_on": f"Question {number} of the race.",
        }
        wake = {
            "blocked_file": str(loop / f"BLOCKED-{number}.md"),
            "command_file": str(loop / f"command-{number}.json"),
        }
        ids.append(accept(runtime, {"packet": packet, "wake": wake}).id)
    for case_id in ids:
        service.in_state(case_id, "awaiting", "followed_up", timeout=60)

    def settled(session: Session) -> bool:
        # one query a poll: fifty (one per case) cost more than the cases' own work
        rows = session.exec(
            select(Delivery.state).where(
                col(Delivery.escalation_id).in_(ids), col(Delivery.purpose).in_(FILE_DELIVERIES)
            )
        ).all()
        return len(rows) == 2 * CASES and all(state in ("sent", "abandoned") for state in rows)

    # When they are all decided and closed while the folder and a link swap places
    with swapping(loop, outside) as swaps:
        for case_id in ids:
            decided = answer(runtime, case_id, option="approve", responder="op", channel="test")
            assert decided.decided
        for case_id in ids:
            service.in_state(case_id, "closed", timeout=60)
        service.wait(settled, timeout=120, what="every file delivery sent or abandoned")
    assert swaps[0] > 0
    # Then not one file was written outside the root (through the link)
    assert sorted(path.name for path in outside.rglob("*")) == []
    # And what was written went ahead whole, in the folder, leaving no temporary file behind
    sent = [
        d
        for i in ids
        for d in service.deliveries(i)
        if d.purpose == "command_file" and d.state == "sent"
    ]
    assert sent, "no command file was written while the folder swapped: the race never ran"
    for delivery in sent:
        assert json.loads(Path(delivery.target).read_text())["escalation_id"]
    assert [p.name for p in loop.iterdir() if p.name.startswith(".")] == []
