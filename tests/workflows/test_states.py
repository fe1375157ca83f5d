"""The state machine as data: every allowed transition passes, every other one is refused."""

from __future__ import annotations

import itertools

import pytest

from workflows.errors import EscalationError, PermanentError
from workflows.states import (
    MAY_HAVE_DECISION,
    OPEN_FOR_DECISION,
    TERMINAL,
    TRANSITIONS,
    State,
    TransitionRefused,
    check_transition,
)

# The machine SPEC §3 describes, written out by hand so a change to the table is a decision.
ALLOWED = {
    (State.RECEIVED, State.SNAPSHOTTED),
    (State.RECEIVED, State.REFUSED),
    (State.RECEIVED, State.DEAD_LETTER),
    (State.SNAPSHOTTED, State.AWAITING),
    (State.SNAPSHOTTED, State.REFUSED),
    (State.SNAPSHOTTED, State.DEAD_LETTER),
    (State.AWAITING, State.FOLLOWED_UP),
    (State.AWAITING, State.DECIDED),
    (State.AWAITING, State.DEAD_LETTER),
    (State.FOLLOWED_UP, State.DECIDED),
    (State.FOLLOWED_UP, State.DEAD_LETTER),
    (State.DECIDED, State.CLOSED),
    (State.DECIDED, State.DEAD_LETTER),
}
REFUSED_PAIRS = sorted(set(itertools.product(State, State)) - ALLOWED)


def test_states_are_lowercase_strings_named_by_their_value() -> None:
    # Given the State enum / Then each value is the lowercase of its name (stored as text in SQL)
    for state in State:
        assert state.value == state.name.lower()
        assert isinstance(state, str)


def test_the_table_lists_every_state_and_exactly_the_allowed_transitions() -> None:
    # Given the transition table / Then it names every state and nothing beyond ALLOWED
    assert set(TRANSITIONS) == set(State)
    table = {(source, target) for source, targets in TRANSITIONS.items() for target in targets}
    assert table == ALLOWED


@pytest.mark.parametrize(("current", "target"), sorted(ALLOWED))
def test_given_an_allowed_transition_when_checked_then_the_target_is_returned(
    current: State, target: State
) -> None:
    # When / Then
    assert check_transition(current, target) is target


@pytest.mark.parametrize(("current", "target"), REFUSED_PAIRS)
def test_given_any_other_transition_when_checked_then_it_is_refused(
    current: State, target: State
) -> None:
    # When / Then: the message names both ends
    with pytest.raises(TransitionRefused) as refused:
        check_transition(current, target)
    assert str(refused.value) == f"cannot go from {current} to {target}"


def test_a_refused_transition_is_a_permanent_escalation_error() -> None:
    # Given a refusal / Then it is not worth retrying: the same call gives the same answer
    assert issubclass(TransitionRefused, PermanentError)
    assert issubclass(TransitionRefused, EscalationError)


@pytest.mark.parametrize("state", list(State))
def test_no_state_may_go_to_itself(state: State) -> None:
    # Given any state / When it "moves" to itself / Then it is refused (a stage never runs twice
    # on the same row and records a second event)
    with pytest.raises(TransitionRefused):
        check_transition(state, state)


def test_terminal_states_are_closed_refused_and_dead_letter() -> None:
    assert frozenset({State.CLOSED, State.REFUSED, State.DEAD_LETTER}) == TERMINAL


@pytest.mark.parametrize("state", sorted(TERMINAL))
@pytest.mark.parametrize("target", list(State))
def test_given_a_terminal_state_then_it_has_no_exit(state: State, target: State) -> None:
    assert TRANSITIONS[state] == frozenset()
    with pytest.raises(TransitionRefused):
        check_transition(state, target)


@pytest.mark.parametrize("state", sorted(set(State) - TERMINAL))
def test_every_live_state_can_be_parked_in_the_dead_letter(state: State) -> None:
    # Given a stage that keeps failing in any live state / Then it can still be parked (§9 never
    # lose an escalation)
    assert check_transition(state, State.DEAD_LETTER) is State.DEAD_LETTER


@pytest.mark.parametrize("state", sorted(set(State) - TERMINAL))
def test_every_live_state_reaches_a_terminal_state(state: State) -> None:
    # Given any live state / Then some path leads to a terminal state (nothing is stuck)
    seen, frontier = {state}, [state]
    while frontier:
        for target in TRANSITIONS[frontier.pop()]:
            if target not in seen:
                seen.add(target)
                frontier.append(target)
    assert seen & TERMINAL


def test_a_decided_case_always_passes_through_closed_or_dead_letter() -> None:
    # Given a decision / Then the only ways on are the close entry or the dead letter (§3.6)
    assert TRANSITIONS[State.DECIDED] == frozenset({State.CLOSED, State.DEAD_LETTER})


def test_open_for_decision_is_awaiting_and_followed_up() -> None:
    # Given the states in which a deciding reply is accepted / Then they are exactly the routed,
    # undecided ones, and each may move to DECIDED
    assert frozenset({State.AWAITING, State.FOLLOWED_UP}) == OPEN_FOR_DECISION
    for state in OPEN_FOR_DECISION:
        assert check_transition(state, State.DECIDED) is State.DECIDED


@pytest.mark.parametrize("state", sorted(set(State) - OPEN_FOR_DECISION))
def test_states_not_open_for_decision_cannot_be_decided(state: State) -> None:
    # Given a case not yet routed, or already decided/closed / Then no decision may be recorded
    with pytest.raises(TransitionRefused):
        check_transition(state, State.DECIDED)


def test_the_follow_up_happens_at_most_once() -> None:
    # Given a case already followed up / Then it cannot be followed up again (§3.4 exactly one)
    with pytest.raises(TransitionRefused):
        check_transition(State.FOLLOWED_UP, State.FOLLOWED_UP)
    assert State.FOLLOWED_UP not in TRANSITIONS[State.FOLLOWED_UP]


def test_a_decision_row_can_exist_only_from_decided_on() -> None:
    # The states a decision leads to, and dead_letter (a case parked while closing keeps its
    # decision): a reply to a case in any other state does not look for one.
    assert {State.DECIDED, State.CLOSED, State.DEAD_LETTER} == MAY_HAVE_DECISION
    assert not MAY_HAVE_DECISION & OPEN_FOR_DECISION
