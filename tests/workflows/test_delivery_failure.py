"""The delivery-failure case as pure rules: what it repeats, who joins it, how it settles."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tests.workflows.test_stages import DESIGN, make_case, packet_for
from workflows.case import Case, parse_options
from workflows.delivery_failure import (
    FAILING_KEY,
    channel_joined,
    delivery_failure_packet,
    joined_notice,
    settled_by_original,
)
from workflows.notifications import (
    CITED_TOKEN_MARKER,
    cited_link_marker,
    fill_cited_markers,
)
from workflows.packet_checks import check_packet
from workflows.routing import route_case
from workflows.secrets import find_secrets
from workflows.stage_results import DecisionSpec, Purpose, Reading
from workflows.states import State

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
URL = "https://escalate.example"
OPTIONS = parse_options([{"label": "skip", "description": "drop the 3 orphans"}, "placeholder"])
OPS = "mmost://chat.example/hooks/**** #1a2b3c4d5e"
MAIL = "mailto://ops@example.com #9f8e7d6c5b"


def failure_case(**changes: Any) -> Case:
    first = make_case(packet_for("medium"), state=State.AWAITING, options=OPTIONS)
    packet = delivery_failure_packet(first, target=OPS, attempts=5, error="503", failing=[MAIL])
    assert packet is not None
    fields = {"state": State.SNAPSHOTTED, "cites_id": first.id, **changes}
    return make_case(packet, options=parse_options(["acknowledge"]), **fields)


def test_the_second_packet_lists_every_failing_channel_and_the_original_question() -> None:
    first = make_case(packet_for("medium"), state=State.AWAITING, options=OPTIONS)
    packet = delivery_failure_packet(
        first, target=OPS, attempts=5, error="503", failing=[MAIL, OPS]
    )
    assert packet is not None
    assert packet[FAILING_KEY] == [OPS, MAIL]  # the one that escalated first, each once
    assert packet["trigger_detail"].endswith(f"Also failing: {MAIL}")
    assert packet["original"] == {
        "case": first.id,
        "question": first.packet["requested_action"],
        "options": [
            {"label": "skip", "description": "drop the 3 orphans"},
            {"label": "placeholder", "description": ""},
        ],
    }
    assert check_packet(packet, find_secrets=find_secrets).errors == ()


@pytest.mark.parametrize("reading", list(Reading))
def test_the_failure_notice_repeats_the_original_with_its_code_in_every_form(
    reading: Reading,
) -> None:
    # When the failure case is routed
    case = failure_case()
    result = route_case(case, DESIGN, public_url=URL, now=NOW)
    [notice] = [o for o in result.outbound if o.purpose is Purpose.NOTIFY][:1]
    body = notice.payload["forms"][reading.value]["body"]
    # Then it repeats the original question and choices and names both channels
    assert case.packet["original"]["question"] in body
    assert CITED_TOKEN_MARKER in body and "skip" in body and "placeholder" in body
    assert "mmost://chat.example/hooks/****" in body and "mailto://ops@example.com" in body
    if reading is Reading.MAIL:  # mail carries one link per option of the original
        assert cited_link_marker("skip") in body and cited_link_marker("placeholder") in body


def test_the_original_code_and_links_are_filled_at_send_time() -> None:
    text = f"{CITED_TOKEN_MARKER} skip {cited_link_marker('skip')}"
    filled = fill_cited_markers(text, token="ABCDE12345", links={"skip": "https://x/a/1"})
    assert filled == "ABCDE12345 skip https://x/a/1"


@pytest.mark.parametrize(
    ("channel", "joined"),
    [(OPS, None), (MAIL, None), ("tgram://****/ #777", [OPS, MAIL, "tgram://****/ #777"])],
)
def test_a_channel_joins_the_failure_case_once(channel: str, joined: list[str] | None) -> None:
    found = channel_joined(failure_case(), channel)
    if joined is None:
        assert found is None
        return
    assert found is not None
    event, channels = found
    assert channels == joined
    assert event.kind == "failing_channel_joined" and event.detail["channel"] == channel


def test_a_joining_channel_gets_the_decider_a_notice_of_its_own() -> None:
    case = failure_case(state=State.AWAITING)
    notice = joined_notice(case, DESIGN, "tgram://****/ #777", public_url=URL, now=NOW)
    assert (notice.purpose, notice.target, notice.step) == (Purpose.NOTIFY, "oncall", 3)
    assert "ANOTHER CHANNEL FAILED" in notice.body and "tgram://****/ #777" in notice.body


@pytest.mark.parametrize(
    ("decision", "decided_by"),
    [
        (DecisionSpec("skip", "skip", True, "slack:U1", "slack"), "slack:U1"),
        (
            DecisionSpec("queue", "queue", True, "system (timeout default)", "system", True),
            "the timeout default",
        ),
    ],
)
def test_the_original_decision_settles_the_failure_case(
    decision: DecisionSpec, decided_by: str
) -> None:
    case = failure_case(state=State.FOLLOWED_UP)
    result = settled_by_original(case, "6639750c1de3", decision, now=NOW)
    assert result.state is State.DECIDED and result.decision is not None
    assert result.decision.decided_by == f"system (case 6639750c1de3 decided by {decided_by})"
    assert result.decision.option == decision.option
    assert result.decision.is_default is decision.is_default
    assert result.events[0].detail["original"] == "6639750c1de3"
