"""Two beats are safe (docs/DEPLOYMENT.md): every sweep claims its rows with a conditional
update, so a second scheduler doubles the sweep traffic, never a page or a decision."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from celery import Celery

from tests.support.beat import ThreadBeat
from tests.workers.conftest import Harness
from workflows.examples import valid_packet


@pytest.fixture
def second_beat(celery_app: Celery, tmp_path: Path) -> Iterator[ThreadBeat]:
    service = ThreadBeat(celery_app, tmp_path / "second-beat-schedule")
    service.start()
    yield service
    service.stop()


@pytest.mark.parametrize("backend", ["sqlite", "redis-postgres"], indirect=True)
@pytest.mark.impatient
def test_two_beats_send_one_follow_up_and_apply_one_default(
    service: Harness, second_beat: ThreadBeat
) -> None:
    # Given two beats sweeping the same database
    service.send(
        {
            **valid_packet(),
            "packet_id": "esc-beats-1",
            "severity": "high",
            "waiting_behavior": "paused",
        }
    )
    case = service.case("run-8842", "esc-beats-1")
    # When nobody answers through the window and the timeout
    service.in_state(case.id, "closed", timeout=30)
    # Then one follow-up went to each recipient, one default, one decision
    assert len(service.events(case.id, "followed_up")) == 1
    assert len(service.events(case.id, "timeout_default")) == 1
    assert len(service.decisions(case.id)) == 1
    follow_ups = [r for r in service.sink.posts("/oncall") if "follow-up" in r.body["title"]]
    assert len(follow_ups) <= 1  # a page cancelled because the default came first is fine
    assert len([d for d in service.deliveries(case.id) if d.purpose == "follow_up"]) == 2
