"""The resolution notice (issue #10): every paged tag learns who chose what, when."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from tests.workflows.test_notifications import make_case
from workflows.closing import close_case
from workflows.stage_results import DecisionSpec, Purpose, Role, Via
from workflows.states import State

NOW = datetime(2026, 10, 16, 10, 0, 0, tzinfo=UTC)


def closed(decision: DecisionSpec, paged: tuple[str, ...] = ("ops", "ops-log")) -> list:  # type: ignore[type-arg]
    case = replace(make_case(), state=State.DECIDED)
    result = close_case(case, decision, current=None, probe_error=None, now=NOW, paged=paged)
    return [o for o in result.outbound if o.purpose == Purpose.RESOLUTION]


def test_every_paged_tag_is_told_who_decided_what_and_when() -> None:
    # Given a case paged to ops and its copy, decided by a person
    decision = DecisionSpec("approve", "approve", True, "slack:U7", "slack")
    # When it closes
    notices = closed(decision)
    # Then each tag gets one short notice saying who, what, when, and that nothing is needed
    assert [(n.channel, n.target, n.role) for n in notices] == [
        (Via.APPRISE, "ops", Role.COPY),
        (Via.APPRISE, "ops-log", Role.COPY),
    ]
    lines = notices[0].body.splitlines()
    assert lines[0] == "Decided: approve by slack:U7 at 2026-10-16T10:00:00+00:00."
    assert lines[-1] == "Nothing more is needed. Case 3f2a9c1b7d4e · run run-8842"
    assert notices[0].title == "[escalate] Decided: approve · run-8842"
    forms = notices[0].payload["forms"]
    assert forms["mail"]["html"].count("Nothing more is needed") == 1
    assert forms["chat"]["notify_type"] == "success" and len(forms["chat"]["body"]) < 500


def test_a_default_says_nobody_answered_and_names_no_person() -> None:
    decision = DecisionSpec("queue", "queue", True, "system (timeout default)", "system", True)
    [notice, _] = closed(decision)
    assert notice.body.splitlines()[0] == (
        "Nobody answered in time: the default queue applied at 2026-10-16T10:00:00+00:00."
    )
    assert "system" not in notice.body
    assert notice.title.startswith("[escalate] Defaulted: queue")


def test_a_case_nobody_was_paged_for_gets_no_notice() -> None:
    assert closed(DecisionSpec("approve", "approve", True, "api", "api"), paged=()) == []
