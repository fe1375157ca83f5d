"""Operators' reasons as the run reads them: who, when, what, why, oldest first."""

from __future__ import annotations

from datetime import UTC, datetime

from workflows.reasons import reason_line, reasons_of

AT = datetime(2026, 12, 1, 7, 0, tzinfo=UTC)


def test_each_handling_event_becomes_a_reason_and_nothing_else_does() -> None:
    events = [
        (AT, "routed", {"primary": "ops"}),
        (AT, "acknowledged", {"by": "dashboard:ana", "reason": "looking now"}),
        (AT, "snoozed", {"by": "api:bo", "reason": "vendor at 9", "minutes": 60}),
        (AT, "reassigned", {"by": "api:bo", "reason": "on-call owns it", "from": "medium",
                            "to": "high", "primary": "oncall"}),
    ]  # fmt: skip
    assert reasons_of(events) == [
        {"what": "acknowledged", "who": "dashboard:ana", "when": AT.isoformat(),
         "why": "looking now"},
        {"what": "extended", "who": "api:bo", "when": AT.isoformat(), "why": "vendor at 9",
         "minutes": 60},
        {"what": "reassigned", "who": "api:bo", "when": AT.isoformat(), "why": "on-call owns it",
         "from": "medium", "to": "high"},
    ]  # fmt: skip


def test_a_reason_reads_as_one_line() -> None:
    [extended] = reasons_of([(AT, "snoozed", {"by": "bo", "reason": "a\nb", "minutes": 15})])
    assert reason_line(extended) == f"extended by 15 min by bo at {AT.isoformat()}: a b"
