"""Retrying a dead-lettered case: back to where it stuck, and only from dead_letter."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from workflows.case import Case
from workflows.examples import valid_packet
from workflows.stages import retry_dead_letter
from workflows.states import RETRYABLE, TERMINAL, State, TransitionRefused

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
PARKED = Case(
    id="c1", run_id="run-8842", packet_id="p1", state=State.DEAD_LETTER, packet=valid_packet()
)


@pytest.mark.parametrize("stuck_in", sorted(RETRYABLE))
def test_a_parked_case_goes_back_where_it_stuck_and_is_due_now(stuck_in: State) -> None:
    result = retry_dead_letter(PARKED, stuck_in, by="api:operator", now=NOW)
    assert result.state is stuck_in and result.next_action_at == NOW
    assert [(e.kind, dict(e.detail)) for e in result.events] == [
        ("retried", {"into": stuck_in.value, "by": "api:operator"})
    ]


@pytest.mark.parametrize("stuck_in", sorted(TERMINAL))
def test_nothing_is_retried_into_an_end_state(stuck_in: State) -> None:
    with pytest.raises(TransitionRefused):
        retry_dead_letter(PARKED, stuck_in, by="x", now=NOW)


@pytest.mark.parametrize("state", sorted(set(State) - {State.DEAD_LETTER}))
def test_only_a_parked_case_is_retried(state: State) -> None:
    with pytest.raises(TransitionRefused, match="only a dead_letter case"):
        retry_dead_letter(replace(PARKED, state=state), State.RECEIVED, by="x", now=NOW)


def test_dead_letter_stays_an_end_state_for_every_waiter() -> None:
    assert State.DEAD_LETTER in TERMINAL
