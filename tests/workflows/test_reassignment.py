"""Reassigning to another tier: the new tier's pages and clock from now; the rules stay whole."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.workflows.test_stages import DESIGN, PUBLIC_URL, make_case, packet_for
from workflows.errors import Conflict, InvalidInput
from workflows.reassignment import reassignment
from workflows.routing import follow_up
from workflows.stage_results import Purpose, Role
from workflows.states import State

NOW = datetime(2026, 12, 1, 7, 0, tzinfo=UTC)
EARLIER = NOW - timedelta(hours=3)


def move(case_state: State = State.AWAITING, to: str = "high", **packet: str) -> object:
    case = make_case(packet_for(**packet), state=case_state, routed_at=EARLIER)
    return reassignment(
        case, DESIGN, to=to, by="dashboard:ana", reason="billing data: on-call owns it",
        public_url=PUBLIC_URL, now=NOW,
    )  # fmt: skip


def test_a_medium_case_moved_to_high_pages_high_and_runs_on_its_clock_from_now() -> None:
    # Given an awaiting medium case, When an operator reassigns it to high
    done = reassignment(
        make_case(packet_for("medium"), state=State.FOLLOWED_UP, routed_at=EARLIER,
                  extended=timedelta(minutes=30)),
        DESIGN, to="high", by="dashboard:ana", reason="billing data: on-call owns it",
        public_url=PUBLIC_URL, now=NOW,
    )  # fmt: skip
    # Then it waits out high's window from now, back in awaiting (its one follow-up is high's)
    assert done.state is State.AWAITING
    assert done.next_action_at == NOW + timedelta(minutes=15)
    assert done.packet["severity"] == "high"
    # And high's primary is paged, its copy marked as a copy
    assert [(p.purpose, p.target, p.role) for p in done.pages] == [
        (Purpose.NOTIFY, "oncall", Role.PRIMARY),
        (Purpose.NOTIFY, "ops", Role.COPY),
    ]
    # And the timeline says who, why, from and to, and the default that now applies
    assert done.event.kind == "reassigned"
    assert done.event.detail == {
        "by": "dashboard:ana",
        "reason": "billing data: on-call owns it",
        "from": "medium",
        "to": "high",
        "primary": "oncall",
        "window_seconds": 900.0,
        "timeout_seconds": 3600.0,
        "timeout_action": "retry",
    }


def test_the_new_tiers_timeout_counts_from_the_move_without_the_old_extension() -> None:
    case = make_case(packet_for("medium"), state=State.AWAITING, routed_at=EARLIER,
                     extended=timedelta(minutes=30))  # fmt: skip
    done = reassignment(
        case, DESIGN, to="low", by="ana", reason="it can wait", public_url=PUBLIC_URL, now=NOW
    )
    moved = make_case(done.packet, state=State.AWAITING, routed_at=NOW)
    later = follow_up(moved, DESIGN, public_url=PUBLIC_URL, now=done.next_action_at)
    assert later.next_action_at == NOW + timedelta(hours=8)  # low's timeout, from the move


def test_a_harm_risk_case_still_aborts_whatever_the_tier() -> None:
    done = move(to="low", trigger_type="harm_risk")
    assert done.event.detail["timeout_action"] == "abort"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("state", "to", "packet", "error", "says"),
    [
        (State.CLOSED, "high", {}, Conflict, "only an open case"),
        (State.SNAPSHOTTED, "high", {}, Conflict, "only an open case"),
        (State.AWAITING, "medium", {}, Conflict, "at the medium tier already"),
        (State.AWAITING, "urgent", {}, InvalidInput, "tier: one of low, medium, high, critical"),
        # a read_only run keeps working: never under a critical tier (SPEC §1)
        (State.AWAITING, "critical", {}, Conflict, "critical needs a run that is paused"),
    ],
)
def test_what_cannot_be_reassigned_says_why(
    state: State, to: str, packet: dict[str, str], error: type[Exception], says: str
) -> None:
    with pytest.raises(error, match=says):
        move(state, to, **packet)


def test_a_paused_run_may_go_critical() -> None:
    done = move(to="critical", severity="high", waiting_behavior="paused")
    assert done.packet["severity"] == "critical"  # type: ignore[attr-defined]


def test_a_reassignment_needs_a_reason() -> None:
    case = make_case(packet_for(), state=State.AWAITING)
    with pytest.raises(InvalidInput, match="reason"):
        reassignment(case, DESIGN, to="high", by="ana", reason=" \n", public_url="", now=NOW)
