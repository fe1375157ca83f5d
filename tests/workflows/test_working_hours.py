"""Working hours as a pure rule: when a page of each severity may go out, `now` a parameter."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from workflows.working_hours import WorkingHours, is_open, opens_at, page_time

BERLIN = WorkingHours(timezone="Europe/Berlin", start="09:00", end="17:00")  # type: ignore[arg-type]
NIGHT = WorkingHours(
    timezone="America/New_York",
    days=("sat", "sun"),
    start="22:00",  # type: ignore[arg-type]
    end="06:00",  # type: ignore[arg-type]
)


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# (hours, now in UTC, when a page goes out, in UTC). 2026-12-01 is a Tuesday; Berlin is
# UTC+1 in winter, UTC+2 in summer; New York UTC-5 in winter.
CASES = [
    ("inside the span", BERLIN, "2026-12-01T10:00", "2026-12-01T10:00"),
    ("at the opening minute", BERLIN, "2026-12-01T08:00", "2026-12-01T08:00"),
    ("before opening: today's opening", BERLIN, "2026-12-01T06:30", "2026-12-01T08:00"),
    ("at closing: tomorrow's", BERLIN, "2026-12-01T16:00", "2026-12-02T08:00"),
    ("friday night: monday", BERLIN, "2026-12-04T20:00", "2026-12-07T08:00"),
    ("saturday: monday", BERLIN, "2026-12-05T12:00", "2026-12-07T08:00"),
    ("summer time shifts the hour", BERLIN, "2026-07-01T06:30", "2026-07-01T07:00"),
    ("local date, not UTC's", BERLIN, "2026-12-06T23:30", "2026-12-07T08:00"),
    ("night shift, saturday late", NIGHT, "2026-12-06T04:00", "2026-12-06T04:00"),
    ("night shift runs past midnight", NIGHT, "2026-12-06T10:00", "2026-12-06T10:00"),
    ("night shift, after its end", NIGHT, "2026-12-06T12:00", "2026-12-07T03:00"),
    ("night shift, on a weekday", NIGHT, "2026-12-01T12:00", "2026-12-06T03:00"),
]


@pytest.mark.parametrize(
    ("hours", "now", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_given_hours_when_a_page_is_due_then_it_waits_for_the_span(
    hours: WorkingHours, now: str, expected: str
) -> None:
    # When a below-critical page is due at `now`
    sent = page_time(hours, "high", utc(now))
    # Then it goes out then, or when the hours next open
    assert sent == utc(expected)
    assert is_open(hours, sent)
    assert is_open(hours, utc(now)) == (sent == utc(now))


@pytest.mark.parametrize("now", ["2026-12-05T12:00", "2026-12-01T03:00"])
def test_given_a_critical_page_when_the_hours_are_closed_then_it_pierces_them(now: str) -> None:
    assert page_time(BERLIN, "critical", utc(now)) == utc(now)


def test_given_no_hours_then_a_page_goes_out_at_once() -> None:
    assert opens_at(None, utc("2026-12-05T12:00")) == utc("2026-12-05T12:00")
