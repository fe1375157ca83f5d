"""Escalation chains, working hours and acknowledgements in routing: pure, `now` a parameter."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import yaml

from tests.workflows.test_stages import EXAMPLES, make_case, packet_for
from workflows.acknowledgements import stopped_by_ack
from workflows.chains import Chain, chain_pages
from workflows.design import Design, parse_design
from workflows.errors import DesignError
from workflows.routing import apply_timeout, follow_up, route_case
from workflows.stage_results import Outbound, Purpose
from workflows.states import State
from workflows.working_hours import WorkingHours

TUESDAY_NOON = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)  # 13:00 in Berlin
SATURDAY = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
MONDAY_OPEN = datetime(2026, 12, 7, 8, 0, tzinfo=UTC)  # 09:00 in Berlin
URL = "https://escalate.example"
HOURS = {"timezone": "Europe/Berlin", "days": ["mon", "tue", "wed", "thu", "fri"],
         "start": "09:00", "end": "18:00"}  # fmt: skip
CHAIN = {
    "levels": [
        {"after": "5m", "recipients": ["oncall"]},
        {"after": "10m", "recipients": ["oncall-2", "lead"]},
    ],
    "repeat": 1,
}


def example() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((EXAMPLES / "design.yaml").read_text())
    return data


def design(**tiers: dict[str, Any]) -> Design:
    data = example()
    for severity, changes in tiers.items():
        data["severities"][severity].update(changes)
        for key in [k for k, v in changes.items() if v is None]:
            del data["severities"][severity][key]
    return parse_design(data, source="test")


def pages(outbound: tuple[Outbound, ...], purpose: Purpose) -> list[Outbound]:
    return [item for item in outbound if item.purpose is purpose]


# --- the chain's timetable ---------------------------------------------------------------


def test_given_a_chain_then_each_level_waits_for_the_one_before_and_rounds_repeat() -> None:
    chain = Chain.model_validate(CHAIN)
    found = chain_pages(chain, start=TUESDAY_NOON, hours=None, severity="high")
    assert [(p.step, p.level, p.round, p.at - TUESDAY_NOON) for p in found] == [
        (1, 1, 1, timedelta(minutes=5)),
        (2, 2, 1, timedelta(minutes=15)),
        (3, 1, 2, timedelta(minutes=20)),
        (4, 2, 2, timedelta(minutes=30)),
    ]
    assert chain.span == timedelta(minutes=30)


def test_given_a_chain_level_due_after_hours_then_it_and_those_after_wait_for_monday() -> None:
    chain = Chain.model_validate(CHAIN)
    friday_late = datetime(2026, 12, 4, 16, 50, tzinfo=UTC)  # 17:50 in Berlin, closes 18:00
    hours = WorkingHours.model_validate(HOURS)
    found = chain_pages(chain, start=friday_late, hours=hours, severity="medium")
    assert [p.at for p in found] == [
        friday_late + timedelta(minutes=5),
        MONDAY_OPEN,  # 18:05 on Friday is closed
        MONDAY_OPEN + timedelta(minutes=5),
        MONDAY_OPEN + timedelta(minutes=15),
    ]
    critical = chain_pages(chain, start=friday_late, hours=hours, severity="critical")
    assert critical[1].at == friday_late + timedelta(minutes=15)


# --- the design schema -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("tiers", "problem"),
    [
        (
            {"high": {"chain": CHAIN}},
            "severities.high.next_tier: a tier with a chain pages its levels instead of a next "
            "tier",
        ),
        (
            {"medium": {"chain": {**CHAIN, "repeat": 7}}},
            "severities.medium.chain: the chain's last page is due 2h after the first notice, "
            "not before the timeout 2h",
        ),
        ({"medium": {"chain": {"levels": []}}}, "severities.medium.chain.levels: list at least"),
        (
            {"medium": {"chain": {"levels": [{"after": 5, "recipients": "ops"}]}}},
            "severities.medium.chain.levels[0].after: 5 has no unit",
        ),
        (
            {"medium": {"chain": {"levels": [{"after": "5m", "recipient": "ops"}]}}},
            "severities.medium.chain.levels[0].recipient: unknown key (did you mean 'recipients'?",
        ),
        (
            {"medium": {"chain": {"levels": [{"after": "5m", "recipients": "http://x"}]}}},
            "severities.medium.chain.levels[0].recipients[0]: must be an apprise tag",
        ),
        (
            {"medium": {"chain": {**CHAIN, "stop_on": "reply"}}},
            "severities.medium.chain.stop_on: 'reply' is not valid (use decision or ack)",
        ),
        ({"critical": {"hours": HOURS}}, "severities.critical.hours: critical pages pierce"),
        (
            {"low": {"hours": {**HOURS, "timezone": "Europe/Berln"}}},
            "severities.low.hours.timezone: 'Europe/Berln' is not a time zone",
        ),
        ({"low": {"hours": {**HOURS, "start": 900}}}, "severities.low.hours.start: 900 is not"),
        (
            {"low": {"hours": {**HOURS, "days": ["mon", "fry"]}}},
            "severities.low.hours.days[1]: unknown day (did you mean 'fri'?",
        ),
        ({"low": {"hours": {**HOURS, "end": "09:00"}}}, "severities.low.hours.end: start and end"),
        (
            {"low": {"hours": {**HOURS, "tz": "UTC"}}},
            "severities.low.hours.tz: unknown key (valid: timezone, days, start, end)",
        ),
    ],
)
def test_given_a_bad_chain_or_hours_when_loaded_then_the_error_names_the_key(
    tiers: dict[str, Any], problem: str
) -> None:
    with pytest.raises(DesignError) as raised:
        design(**tiers)
    assert any(line.startswith(problem) for line in raised.value.problems), raised.value.problems


def test_given_a_hold_tier_then_its_chain_may_run_past_the_timeout() -> None:
    held = design(medium={"chain": {**CHAIN, "repeat": 5}, "timeout_default": "hold"})
    assert held.tier("medium").chain is not None


def test_given_chains_and_hours_when_frozen_to_json_then_they_load_back_equal() -> None:
    # The case keeps its design as JSON and reads it again at every stage.
    original = design(high={"chain": CHAIN, "next_tier": None, "hours": HOURS})
    again = parse_design(original.model_dump(mode="json"), source="frozen")
    assert again == original and again.content_hash == original.content_hash
    assert design().content_hash == parse_design(example(), source="x").content_hash


# --- routing -----------------------------------------------------------------------------


def test_given_a_chain_when_routed_then_every_level_is_a_waiting_row_due_at_its_time() -> None:
    chained = design(high={"chain": CHAIN, "next_tier": None})
    case = make_case(packet_for("high"))
    result = route_case(case, chained, public_url=URL, now=TUESDAY_NOON)
    rows = pages(result.outbound, Purpose.CHAIN)
    assert [(r.target, r.step, r.not_before) for r in rows] == [
        ("oncall", 1, TUESDAY_NOON + timedelta(minutes=5)),
        ("oncall-2", 2, TUESDAY_NOON + timedelta(minutes=15)),
        ("lead", 2, TUESDAY_NOON + timedelta(minutes=15)),
        ("oncall", 3, TUESDAY_NOON + timedelta(minutes=20)),
        ("oncall-2", 4, TUESDAY_NOON + timedelta(minutes=30)),
        ("lead", 4, TUESDAY_NOON + timedelta(minutes=30)),
    ]
    assert "ESCALATED (level 2 of 2, round 1 of 2)" in rows[1].body
    assert all(r.not_before is None for r in pages(result.outbound, Purpose.NOTIFY))


def test_given_a_chain_when_the_window_passes_then_no_extra_follow_up_is_sent() -> None:
    chained = design(high={"chain": CHAIN, "next_tier": None})
    case = make_case(packet_for("high"), state=State.AWAITING, routed_at=TUESDAY_NOON)
    result = follow_up(case, chained, public_url=URL, now=TUESDAY_NOON + timedelta(minutes=15))
    assert result.state is State.FOLLOWED_UP and result.outbound == ()
    assert result.events[0].detail["chain"] is True
    assert result.next_action_at == TUESDAY_NOON + timedelta(hours=1)


def test_given_closed_hours_when_routed_then_the_notice_and_the_window_wait_for_monday() -> None:
    office = design(medium={"hours": HOURS})
    case = make_case(packet_for("medium"))
    result = route_case(case, office, public_url=URL, now=SATURDAY)
    assert {item.not_before for item in pages(result.outbound, Purpose.NOTIFY)} == {MONDAY_OPEN}
    assert result.next_action_at == MONDAY_OPEN + timedelta(hours=1)
    routed = next(e for e in result.events if e.kind == "routed")
    assert routed.detail["held_for_hours_until"] == MONDAY_OPEN.isoformat()
    # And the message's deadline counts from Monday, not from the weekend
    assert (MONDAY_OPEN + timedelta(hours=2)).isoformat(timespec="minutes") in result.outbound[
        0
    ].body


def test_given_a_critical_case_when_the_hours_are_closed_then_it_is_paged_at_once() -> None:
    office = design(low={"hours": HOURS}, medium={"hours": HOURS}, high={"hours": HOURS})
    result = route_case(make_case(packet_for("critical")), office, public_url=URL, now=SATURDAY)
    assert all(item.not_before is None for item in result.outbound)
    assert result.next_action_at == SATURDAY + timedelta(minutes=5)


def test_given_a_follow_up_due_after_hours_then_it_waits_and_keeps_its_time_to_answer() -> None:
    office = design(medium={"hours": HOURS})
    friday_late = datetime(2026, 12, 4, 16, 30, tzinfo=UTC)  # routed 17:30 Berlin
    case = make_case(packet_for("medium"), state=State.AWAITING, routed_at=friday_late)
    result = follow_up(case, office, public_url=URL, now=friday_late + timedelta(hours=1))
    assert {item.not_before for item in result.outbound} == {MONDAY_OPEN}
    assert result.next_action_at == MONDAY_OPEN + timedelta(hours=1)  # timeout - window


# --- acknowledgements ------------------------------------------------------------------


def test_given_an_acknowledged_case_when_the_window_passes_then_nobody_is_reminded() -> None:
    # Given a high case (next tier: critical) that ana acknowledged
    case = make_case(
        packet_for("high"), state=State.AWAITING, routed_at=TUESDAY_NOON, acknowledged_by="ana"
    )
    # When the window passes
    result = follow_up(case, design(), public_url=URL, now=TUESDAY_NOON + timedelta(minutes=15))
    # Then no reminder and no next-tier page, but the timeout still stands
    assert result.state is State.FOLLOWED_UP and result.outbound == ()
    assert result.events[0].detail["acknowledged_by"] == "ana"
    assert result.next_action_at == TUESDAY_NOON + timedelta(hours=1)
    assert result.next_stage is None


def test_given_an_acknowledged_case_when_it_times_out_then_the_default_still_applies() -> None:
    case = make_case(
        packet_for("high"), state=State.FOLLOWED_UP, routed_at=TUESDAY_NOON, acknowledged_by="ana"
    )
    result = apply_timeout(case, design(), public_url=URL, now=TUESDAY_NOON + timedelta(hours=1))
    assert result.state is State.DECIDED and result.decision is not None
    assert result.decision.is_default and result.decision.option == "retry"


def test_given_an_acknowledged_hold_case_when_it_times_out_then_it_waits_paging_nobody() -> None:
    held = design(
        low={"timeout_default": "hold", "next_tier": "medium"}, medium={"next_tier": "high"}
    )
    case = make_case(
        packet_for("low"), state=State.FOLLOWED_UP, routed_at=TUESDAY_NOON, acknowledged_by="ana"
    )
    result = apply_timeout(case, held, public_url=URL, now=TUESDAY_NOON + timedelta(hours=8))
    assert result.state is State.FOLLOWED_UP and result.decision is None
    assert result.outbound == () and result.next_action_at is None
    assert result.events[0].detail == {
        "after_seconds": 8 * 3600.0,
        "paged": [],
        "acknowledged_by": "ana",
    }
    unacknowledged = apply_timeout(
        make_case(packet_for("low"), state=State.FOLLOWED_UP, routed_at=TUESDAY_NOON),
        held,
        public_url=URL,
        now=TUESDAY_NOON + timedelta(hours=8),
    )
    assert [item.target for item in unacknowledged.outbound] == ["oncall", "oncall-pager"]


@pytest.mark.parametrize(
    ("stop_on", "stopped"),
    [
        (None, {Purpose.FOLLOW_UP}),
        ("decision", {Purpose.FOLLOW_UP}),
        ("ack", {Purpose.FOLLOW_UP, Purpose.CHAIN}),
    ],
)
def test_an_ack_stops_reminders_and_a_chain_only_when_it_stops_on_ack(
    stop_on: str | None, stopped: set[Purpose]
) -> None:
    chain = None if stop_on is None else {**CHAIN, "stop_on": stop_on}
    tier = design(high={"chain": chain, "next_tier": None}).tier("high")
    assert stopped_by_ack(tier) == stopped
