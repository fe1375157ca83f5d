"""Intake goes on to the snapshot and routing in its own task, unless storing the case took
so long that those stages would run into the task's time limit: then it nudges them."""

from __future__ import annotations

import pytest

from models.settings import Settings
from tests.workers.conftest import Harness
from workers import tasks
from workflows.examples import valid_packet


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """No sweeper re-drive within the test: only intake itself moves the case on."""
    return settings.model_copy(update={"stall_after": 3600.0})


def test_a_case_stored_quickly_is_snapshotted_and_routed_by_its_intake(
    service: Harness,
) -> None:
    service.send({**valid_packet(), "packet_id": "esc-inline-1"})
    case = service.case("run-8842", "esc-inline-1")
    assert service.in_state(case.id, "awaiting").routed_at is not None


def test_a_case_that_took_long_to_store_is_moved_on_by_a_nudge(
    service: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an intake past its inline budget, as after a slow store
    monkeypatch.setattr(tasks, "INLINE_WITHIN", -1.0)
    # When a case is raised
    service.send({**valid_packet(), "packet_id": "esc-inline-2"})
    case = service.case("run-8842", "esc-inline-2")
    # Then the snapshot and route still run, in tasks of their own
    assert service.in_state(case.id, "awaiting").routed_at is not None
    assert service.events(case.id, "snapshot_recorded")
