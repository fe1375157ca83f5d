"""Extending a deadline: the next look and the timeout move; closed and held cases refuse."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.workflows.test_stages import DESIGN, PUBLIC_URL, make_case, packet_for
from workflows.errors import Conflict, InvalidInput
from workflows.extensions import extension
from workflows.routing import follow_up
from workflows.states import State

NOW = datetime(2026, 12, 1, 7, 0, tzinfo=UTC)


def test_an_extension_moves_the_next_deadline_and_adds_to_the_timeout() -> None:
    done = extension(
        "c1", State.AWAITING, next_action_at=NOW, extended=timedelta(minutes=30),
        minutes=60, by="dashboard:ana", reason="vendor answers at 9",
    )  # fmt: skip
    assert done.next_action_at == NOW + timedelta(hours=1)
    assert done.extended == timedelta(minutes=90)
    assert done.event.kind == "snoozed"
    assert done.event.detail == {
        "by": "dashboard:ana",
        "reason": "vendor answers at 9",
        "minutes": 60,
    }


@pytest.mark.parametrize(
    ("state", "next_at", "minutes", "reason", "error"),
    [
        (State.CLOSED, NOW, 60, "why", Conflict),
        (State.FOLLOWED_UP, None, 60, "why", Conflict),  # held: no deadline to move
        (State.AWAITING, NOW, 0, "why", InvalidInput),
        (State.AWAITING, NOW, 1441, "why", InvalidInput),
        (State.AWAITING, NOW, 60, "  ", InvalidInput),
    ],
)
def test_an_extension_is_refused_where_it_means_nothing(
    state: State, next_at: datetime | None, minutes: int, reason: str, error: type[Exception]
) -> None:
    with pytest.raises(error):
        extension(
            "c1", state, next_action_at=next_at, extended=timedelta(), minutes=minutes,
            by="ana", reason=reason,
        )  # fmt: skip


def test_an_extension_made_while_awaiting_carries_into_the_timeout() -> None:
    # Given a high case routed at NOW and extended by 45 minutes before its follow-up
    plain = make_case(packet_for("high"), state=State.AWAITING, routed_at=NOW)
    extended = make_case(
        packet_for("high"), state=State.AWAITING, routed_at=NOW, extended=timedelta(minutes=45)
    )
    later = NOW + timedelta(minutes=15)
    # When the follow-up goes out / Then the timeout is 45 minutes later than the tier's
    base = follow_up(plain, DESIGN, public_url=PUBLIC_URL, now=later).next_action_at
    moved = follow_up(extended, DESIGN, public_url=PUBLIC_URL, now=later).next_action_at
    assert base is not None and moved == base + timedelta(minutes=45)
