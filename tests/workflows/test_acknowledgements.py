"""An acknowledgement is an event with who and why, on open cases only."""

from __future__ import annotations

import pytest

from workflows.acknowledgements import acknowledgement
from workflows.errors import Conflict, InvalidInput
from workflows.states import State


def test_an_open_case_is_acknowledged_with_who_and_a_one_line_reason() -> None:
    event = acknowledgement("c1", State.FOLLOWED_UP, by="dashboard:ana", reason=" on it\n now ")
    assert (event.kind, event.detail) == (
        "acknowledged",
        {"by": "dashboard:ana", "reason": "on it now"},
    )


@pytest.mark.parametrize("state", [State.RECEIVED, State.DECIDED, State.CLOSED, State.DEAD_LETTER])
def test_a_case_not_open_for_a_decision_is_not_acknowledged(state: State) -> None:
    with pytest.raises(Conflict):
        acknowledgement("c1", state, by="ana", reason="on it")


def test_an_acknowledgement_says_why() -> None:
    with pytest.raises(InvalidInput):
        acknowledgement("c1", State.AWAITING, by="ana", reason="   ")
