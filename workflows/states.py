"""The escalation state machine as data: states, allowed transitions, one guard."""

from __future__ import annotations

from enum import StrEnum

from workflows.errors import PermanentError


class State(StrEnum):
    RECEIVED = "received"  # accepted and stored; snapshot next
    SNAPSHOTTED = "snapshotted"  # last good state recorded; route and queue deliveries next
    AWAITING = "awaiting"  # notified; waiting out the response window
    FOLLOWED_UP = "followed_up"  # the one follow-up went out; waiting out the timeout
    DECIDED = "decided"  # a decision is recorded (human or default); recheck and close next
    CLOSED = "closed"  # close entry written; the run was woken
    REFUSED = "refused"  # the packet failed its checks; nothing was sent
    DEAD_LETTER = "dead_letter"  # a stage kept failing; parked for a person to look at


TRANSITIONS: dict[State, frozenset[State]] = {
    State.RECEIVED: frozenset({State.SNAPSHOTTED, State.REFUSED, State.DEAD_LETTER}),
    State.SNAPSHOTTED: frozenset({State.AWAITING, State.REFUSED, State.DEAD_LETTER}),
    State.AWAITING: frozenset({State.FOLLOWED_UP, State.DECIDED, State.DEAD_LETTER}),
    State.FOLLOWED_UP: frozenset({State.DECIDED, State.DEAD_LETTER}),
    State.DECIDED: frozenset({State.CLOSED, State.DEAD_LETTER}),
    State.CLOSED: frozenset(),
    State.REFUSED: frozenset(),
    State.DEAD_LETTER: frozenset(),
}


def _reachable_from(state: State) -> frozenset[State]:
    """`state` and every state a case can come to after it."""
    reached, frontier = {state}, [state]
    while frontier:
        for after in TRANSITIONS[frontier.pop()] - reached:
            reached.add(after)
            frontier.append(after)
    return frozenset(reached)


# A decision row is written on the way into `decided` and never removed, so it may exist in
# every state from there on (a case parked while closing keeps its decision): in any other, a
# reply need not look for one.
MAY_HAVE_DECISION = _reachable_from(State.DECIDED)

# Where a person may send a dead-lettered case back to, once its cause is fixed: the state
# it was stuck in. Outside TRANSITIONS because dead_letter stays terminal for every waiter.
RETRYABLE = frozenset(
    {State.RECEIVED, State.SNAPSHOTTED, State.AWAITING, State.FOLLOWED_UP, State.DECIDED}
)
# Reassigning to another tier puts an open case back in awaiting, the new tier's window. Not
# in TRANSITIONS either: no stage may route a followed-up case again, only a person's move.
REASSIGNED_INTO = State.AWAITING
# A deciding reply is accepted once the case is routed (it has a snapshot to recheck).
OPEN_FOR_DECISION = frozenset({State.AWAITING, State.FOLLOWED_UP})
TERMINAL = frozenset(state for state, targets in TRANSITIONS.items() if not targets)
OPEN = frozenset(state for state in State if state not in TERMINAL)


class TransitionRefused(PermanentError):
    """A transition the state machine does not allow."""


def check_transition(current: State, target: State) -> State:
    """Returns `target` when the machine allows current → target, else raises."""
    if target not in TRANSITIONS[current]:
        raise TransitionRefused(f"cannot go from {current} to {target}")
    return target
