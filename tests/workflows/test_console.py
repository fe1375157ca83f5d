"""The console's pure view rules: order, countdowns, badges, sentences, links."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from workflows.case import Option
from workflows.console import (
    badges,
    closed_summary,
    countdown,
    due_key,
    last_attempts,
    page_title,
    safe_link,
    severity_counts,
    timeline_sentence,
    understood_words,
)
from workflows.replies import parse_reply

NOW = datetime(2026, 12, 1, 7, 0, tzinfo=UTC)


def test_what_is_due_first_is_severity_then_time_left_then_age() -> None:
    cases = {
        "low-soon": due_key("low", NOW + timedelta(minutes=1), NOW, now=NOW),
        "high-late": due_key("high", NOW + timedelta(hours=3), NOW, now=NOW),
        "high-soon": due_key("high", NOW + timedelta(minutes=5), NOW, now=NOW),
        "high-none": due_key("high", None, NOW - timedelta(days=1), now=NOW),
        "critical-none": due_key("critical", None, NOW, now=NOW),
        "odd": due_key("urgent", NOW, NOW, now=NOW),
    }
    order = sorted(cases, key=lambda name: cases[name])
    assert order == ["critical-none", "high-soon", "high-late", "high-none", "low-soon", "odd"]


@pytest.mark.parametrize(
    ("left", "said"),
    [
        (timedelta(minutes=18, seconds=30), "abort in 18 min"),
        (timedelta(seconds=42), "abort in 42 s"),
        (timedelta(hours=3, minutes=5), "abort in 3 h 5 min"),
        (timedelta(days=3, hours=2), "abort in 3 d 2 h"),
        (timedelta(minutes=-2), "abort overdue by 2 min"),
    ],
)
def test_a_countdown_says_the_default_and_the_time_left(left: timedelta, said: str) -> None:
    assert countdown("abort", NOW + left, now=NOW) == said


def test_a_held_case_counts_down_to_nothing_and_a_closed_one_shows_none() -> None:
    assert countdown("hold", NOW, now=NOW) == "no default: waits for a person"
    assert countdown(None, NOW, now=NOW) is None


def test_badges_name_follow_up_overdue_acknowledgement_and_a_missing_resume() -> None:
    shown = badges(
        state="followed_up",
        deadline=NOW - timedelta(seconds=1),
        acknowledged_by="ana",
        decided_at=None,
        resumed_at=None,
        now=NOW,
    )
    assert [b.text for b in shown] == ["followed up", "overdue", "acknowledged by ana"]
    closed = badges(
        state="closed", deadline=NOW, acknowledged_by=None, decided_at=NOW, resumed_at=None, now=NOW
    )
    assert [b.kind for b in closed] == ["not-resumed"]
    resumed = badges(
        state="closed", deadline=NOW, acknowledged_by=None, decided_at=NOW, resumed_at=NOW, now=NOW
    )
    assert resumed == ()


def test_counts_name_every_severity_and_the_title_leads_with_the_open_count() -> None:
    assert severity_counts(["high", "low", "high", "urgent"]) == {
        "critical": 0,
        "high": 2,
        "medium": 0,
        "low": 1,
    }
    assert page_title(7) == "(7) open — escalations"
    assert page_title(0) == "No open cases — escalations"


@pytest.mark.parametrize(
    ("ref", "href"),
    [
        ("https://ci.example/run/1", "https://ci.example/run/1"),
        ("http://10.0.0.1:8080/log", "http://10.0.0.1:8080/log"),
        ("javascript:alert(1)", None),
        ("data:text/html,<b>x</b>", None),
        ("logs/migrate.log", None),
        ("https://", None),
        ("//evil.example/x", None),
        (None, None),
    ],
)
def test_only_http_and_https_evidence_becomes_a_link(ref: object, href: str | None) -> None:
    assert safe_link(ref) == href


def test_a_closed_case_says_what_was_decided_by_whom_or_that_the_default_applied() -> None:
    assert (
        closed_summary(option="skip", decided_by="slack:U0OPS2", at=NOW, is_default=False)
        == "Decided: skip by slack:U0OPS2 at 2026-12-01 07:00 UTC"
    )
    assert closed_summary(option="abort", decided_by="system", at=NOW, is_default=True) == (
        "Default applied: abort — nobody answered (at 2026-12-01 07:00 UTC)"
    )
    assert closed_summary(option=None, decided_by=None, at=None, is_default=False) is None


def test_the_timeline_reads_as_sentences() -> None:
    at = NOW.replace(hour=7, minute=12)
    sent = {"purpose": "notify", "channel": "oncall", "outcome": "sent", "attempt": 1}
    assert timeline_sentence(at, "delivery_attempt", sent) == "07:12 notified oncall — sent"
    decided = {"option": "skip", "by": "slack:U0OPS2", "channel": "slack"}
    assert timeline_sentence(at, "decided", decided) == (
        "07:12 decided skip by slack:U0OPS2 via slack"
    )
    assert timeline_sentence(at, "timeout_default", {"action": "abort", "after_seconds": 900}) == (
        "07:12 nobody answered in 15 min: the default abort applied"
    )
    woke = {"purpose": "wake_webhook", "channel": "https://run.example/hook", "outcome": "failed"}
    assert timeline_sentence(at, "delivery_attempt", {**woke, "error": "HTTP 502"}) == (
        "07:12 woke the run's webhook https://run.example/hook — failed: HTTP 502"
    )
    assert timeline_sentence(at, "something_new", {}) == "07:12 something new"


def test_a_card_shows_the_last_two_attempts() -> None:
    events = [
        (NOW, "delivery_attempt", {"purpose": "notify", "channel": f"c{i}", "outcome": "sent"})
        for i in range(3)
    ] + [(NOW, "routed", {})]
    assert last_attempts(events) == ["07:00 notified c1 — sent", "07:00 notified c2 — sent"]


def test_a_preview_says_what_the_grammar_understood_before_anything_is_sent() -> None:
    options = (Option("skip", "skip"), Option("placeholder", "placeholder"))
    assert understood_words(parse_reply("skip them", options), options) == "It decides: skip."
    unsure = understood_words(parse_reply("skip or placeholder?", options), options)
    assert unsure.startswith("It would not decide anything.") and "skip, placeholder" in unsure
    assert "would not be recorded" in understood_words(None, options, secrets=["AWS key"])
