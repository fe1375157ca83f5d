"""What the operator reads (SPEC §4): a five-line headline, then everything needed to answer."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from models.design_file import load_design
from workflows.case import Case, Option, parse_options
from workflows.examples import valid_packet
from workflows.notifications import (
    SHORT_LIMIT,
    Message,
    RouteFacts,
    fill_markers,
    headline,
    one_line,
    render_delivery_failure,
    render_follow_up,
    render_notification,
)
from workflows.routing import route_facts
from workflows.stage_results import Reading
from workflows.states import State

DESIGN = load_design(Path(__file__).resolve().parents[2] / "examples" / "design.yaml")
AT = datetime(2026, 10, 16, 9, 30, 15, 123456, tzinfo=UTC)
PUBLIC_URL = "https://escalate.example"
CASE_ID = "3f2a9c1b7d4e"
FACTS = RouteFacts(
    severity="medium",
    window=timedelta(hours=1),
    timeout=timedelta(hours=2),
    timeout_action="queue",
    waiting_behavior="read_only",
    design="example v3",
)
HEADLINE = [
    "[escalate] blocked in run-8842 on 2026-10-16T09:30:15+00:00",
    "Q: Skip the 3 orphan records, or create placeholder customers for them?",
    "Context: Migrate 120 records and verify totals match source.",
    "Attempted: Re-ran the migration with a fresh target table.; "
    "Compared source and target ids; 3 ids have no target customer.",
    "Choices: approve | deny",
]


def make_case(packet: dict[str, Any] | None = None, **fields: Any) -> Case:
    packet = valid_packet() if packet is None else packet
    fields.setdefault("options", parse_options(None))
    return Case(
        id=CASE_ID,
        run_id=packet["run_id"],
        packet_id=packet["packet_id"],
        state=State.AWAITING,
        packet=packet,
        **fields,
    )


def render(case: Case | None = None, **kwargs: Any) -> Message:
    return render_notification(
        case or make_case(), kwargs.pop("facts", FACTS), public_url=PUBLIC_URL, at=AT, **kwargs
    )


# --- the headline -----------------------------------------------------------------------------


def test_given_the_valid_packet_then_the_headline_is_five_exact_lines() -> None:
    # Given / When
    case = make_case()
    # Then
    assert headline(case, case.options, at=AT) == HEADLINE


@pytest.mark.parametrize(
    ("at", "shown"),
    [
        (datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), "2026-01-02T03:04:05+00:00"),
        (
            datetime(2026, 1, 2, 3, 4, 5, 999999, tzinfo=timezone(timedelta(hours=2))),
            "2026-01-02T03:04:05+02:00",
        ),
        (
            datetime(2026, 7, 1, 23, 59, 0, tzinfo=timezone(timedelta(hours=-5, minutes=-30))),
            "2026-07-01T23:59:00-05:30",
        ),
    ],
)
def test_the_first_line_states_run_and_iso_time_to_the_second_with_its_offset(
    at: datetime, shown: str
) -> None:
    case = make_case()
    assert headline(case, case.options, at=at)[0] == f"[escalate] blocked in run-8842 on {shown}"


def test_given_multi_line_text_then_each_headline_field_is_one_line() -> None:
    # Given a packet written with line breaks and tabs
    packet = valid_packet()
    packet["requested_action"] = "Skip the rows\n   or create\tplaceholders?\n"
    packet["task_summary"] = "  Migrate records.\r\nVerify totals.  "
    packet["attempted"] = ["Re-ran\nthe migration.", "Compared\n\nids."]
    # When
    lines = headline(make_case(packet), parse_options(None), at=AT)
    # Then
    assert lines[1:4] == [
        "Q: Skip the rows or create placeholders?",
        "Context: Migrate records. Verify totals.",
        "Attempted: Re-ran the migration.; Compared ids.",
    ]
    assert all("\n" not in line and "\r" not in line for line in lines)


def test_given_a_long_question_then_it_is_cut_to_200_characters_with_an_ellipsis() -> None:
    packet = valid_packet()
    packet["requested_action"] = "word " * 100
    question = headline(make_case(packet), (), at=AT)[1]
    assert question.startswith("Q: word word")
    assert len(question.removeprefix("Q: ")) == 200
    assert question.endswith("…")


def test_the_choices_line_lists_every_option_label_in_order() -> None:
    options = parse_options(["Retry", "Skip the step", {"label": "Stop", "value": "stop"}])
    assert headline(make_case(), options, at=AT)[4] == "Choices: Retry | Skip the step | Stop"


SHORT = (Reading.CHAT, Reading.BUTTONS, Reading.PUSH)


def test_a_short_message_opens_with_the_headline() -> None:
    # Given any phone-first form / Then its first five lines are the headline, in order
    for reading in SHORT:
        assert render(reading=reading).body.splitlines()[:5] == HEADLINE


def test_a_short_message_is_the_headline_the_default_one_answer_line_and_one_case_link() -> None:
    lines = render(reading=Reading.CHAT).body.splitlines()
    assert lines[5:] == [
        "If nobody answers by 2026-10-16T11:30+00:00, the default applies: queue.",
        "Answer: reply here with the code, then your choice: {{reply_token}} <choice>",
        f"Case: {PUBLIC_URL}/dashboard/cases/{CASE_ID}",
    ]


@pytest.mark.parametrize(
    ("reading", "answer"),
    [
        (
            Reading.CHAT,
            "Answer: reply here with the code, then your choice: {{reply_token}} <choice>",
        ),
        (Reading.BUTTONS, "Answer: tap a button, or open the case below (code {{reply_token}})"),
        (Reading.PUSH, "Answer: open the case below (code {{reply_token}})"),
    ],
)
def test_how_to_answer_names_only_the_ways_that_channel_has(reading: Reading, answer: str) -> None:
    body = render(reading=reading).body
    assert answer in body.splitlines()
    if reading is not Reading.CHAT:
        assert "reply here" not in body


@pytest.mark.parametrize("count", [1, 2, 7, 40])
def test_a_short_message_stays_under_1000_characters_whatever_the_options(count: int) -> None:
    # Given long text everywhere and many long options
    packet = {**valid_packet(), "run_id": "r" * 300, "requested_action": "why " * 300}
    packet["task_summary"] = "ctx " * 300
    packet["attempted"] = ["step " * 100] * 5
    options = parse_options([f"option number {i} " + "x" * 60 for i in range(count)])
    case = make_case(packet, options=options)
    for reading in SHORT:
        for message in (
            render(case, reading=reading),
            render(case, reading=reading, copy_for="ops-" + "o" * 200),
            render_follow_up(
                case, FACTS, public_url=PUBLIC_URL, at=AT, next_tier=True, reading=reading
            ),
        ):
            # Then it fits, each option label appears once at most, the answer line is kept
            assert len(message.body) <= SHORT_LIMIT, (reading, len(message.body))
            assert message.body.count("option number 0") == 1
            assert "{{reply_token}}" in message.body
            assert message.body.splitlines()[-1].startswith("Case: ")


def test_a_short_message_says_each_fact_once() -> None:
    body = render(reading=Reading.PUSH).body
    packet = valid_packet()
    assert body.count(packet["requested_action"]) == 1
    assert body.count("approve") == 1 and body.count("deny") == 1
    assert body.count(PUBLIC_URL) == 1


def test_the_short_title_says_a_decision_is_needed_its_severity_and_the_code() -> None:
    assert render(reading=Reading.CHAT).title == (
        "[escalate] Decision needed (medium) · {{reply_token}}"
    )


@pytest.mark.parametrize(
    ("severity", "kind"),
    [("low", "info"), ("medium", "info"), ("high", "warning"), ("critical", "failure")],
)
def test_the_notify_type_follows_severity(severity: str, kind: str) -> None:
    facts = RouteFacts(severity, timedelta(hours=1), timedelta(hours=2), "queue", "paused", "d")
    for reading in Reading:
        assert render(facts=facts, reading=reading).notify_type == kind


# --- mail -------------------------------------------------------------------------------------


def test_the_mail_subject_says_what_is_needed_with_severity_question_and_code() -> None:
    assert render().title == (
        "[escalate] Decision needed (medium): Skip the 3 orphan records, or create placeholder "
        "customers for them? · {{reply_token}}"
    )


def test_the_mail_subject_is_one_line_and_cuts_the_question_at_100_characters() -> None:
    packet = {**valid_packet(), "requested_action": "x\ny " * 80}
    title = render(make_case(packet)).title
    assert "\n" not in title
    question = title.removeprefix("[escalate] Decision needed (medium): ").split(" · ")[0]
    assert len(question) == 100 and question.endswith("…")


def test_the_mail_text_states_each_fact_once_on_its_own_line() -> None:
    packet = valid_packet()
    body = render().body
    lines = body.splitlines()
    for line in (
        f"Question: {packet['requested_action']}",
        f"Context: {packet['task_summary']}",
        f"Blocked on: {packet['blocked_on']}",
        f"Failure: {packet['trigger_detail']}",
        "Trigger: uncertain",
        "- log: logs/migrate-run-8842.log",
        "- artifact: artifacts/orphan-ids.csv",
    ):
        assert line in lines
    assert body.count(packet["requested_action"]) == 1
    assert body.count(packet["blocked_on"]) == 1
    assert lines[-1] == (
        f"Case {CASE_ID} · packet esc-2026-10-16-005 · design example v3 · code {{{{reply_token}}}}"
    )


def test_each_option_is_listed_once_with_its_description_and_its_own_link() -> None:
    options = parse_options(
        [
            {"label": "Use backup", "value": "backup", "description": "Restore\nlast night."},
            "retry",
        ]
    )
    lines = render(make_case(options=options)).body.splitlines()
    start = lines.index("Options:")
    assert lines[start + 1 : start + 5] == [
        "- Use backup — Restore last night.",
        "  {{link:Use backup}}",
        "- retry",
        "  {{link:retry}}",
    ]


def test_mail_how_to_answer_offers_links_the_case_page_and_the_cli_but_no_reply() -> None:
    body = render().body
    assert (
        "How to answer: open an option's link above (it asks before it decides), the case page "
        f"{PUBLIC_URL}/dashboard/cases/{CASE_ID}, or run: escalate reply {CASE_ID} approve"
    ) in body.splitlines()
    assert "reply on this channel" not in body and "reply here" not in body


def test_markers_are_filled_with_the_code_and_this_channels_links() -> None:
    body = fill_markers(
        render().body,
        token="K7Q2MX9D4P",
        links={"approve": "https://x/a/1", "deny": "https://x/a/2"},
    )
    assert body.endswith("code K7Q2MX9D4P")
    assert "  https://x/a/1" in body and "  https://x/a/2" in body
    assert "{{" not in body


@pytest.mark.parametrize(
    ("facts", "sentence"),
    [
        (
            FACTS,
            "While waiting the run is read_only. If nobody decides by 2026-10-16T11:30+00:00 "
            "(within 2h), the default applies: queue.",
        ),
        (
            RouteFacts(
                "critical", timedelta(minutes=5), timedelta(minutes=30), "abort", "stopped", "d v1"
            ),
            "While waiting the run is stopped. If nobody decides by 2026-10-16T10:00+00:00 "
            "(within 30m), the default applies: abort.",
        ),
    ],
)
def test_the_waiting_behavior_and_the_default_on_timeout_are_stated(
    facts: RouteFacts, sentence: str
) -> None:
    assert sentence in render(facts=facts).body.splitlines()


def test_the_html_part_escapes_packet_text_and_links_only_the_answers() -> None:
    # Given an agent's text with markup in it
    packet = {
        **valid_packet(),
        "requested_action": "Skip <customer_ref>? <a href='https://evil.example'>click</a>",
    }
    html = render(make_case(packet)).html
    # Then it is text in the HTML part, and the only links are the answer links
    assert "&lt;customer_ref&gt;" in html and "<customer_ref>" not in html
    assert "evil.example'>" not in html
    assert html.count("<a href=") == 2
    assert '<a href="{{link:approve}}">' in html


def test_the_facts_from_the_design_reach_the_message() -> None:
    # Given a harm_risk packet routed by the example design / Then abort is stated as the default
    packet = {**valid_packet(), "severity": "high", "trigger_type": "harm_risk"}
    packet["waiting_behavior"] = "paused"
    case = make_case(packet)
    body = render(case, facts=route_facts(DESIGN, case)).body
    assert "(within 1h), the default applies: abort." in body
    assert "Trigger: harm_risk" in body
    assert "design example v3 · code" in body


# --- copies -----------------------------------------------------------------------------------


def test_a_copy_is_marked_in_title_and_body_and_names_the_primary() -> None:
    short = render(copy_for="ops", reading=Reading.CHAT)
    assert short.body.splitlines()[:5] == HEADLINE
    assert short.body.splitlines()[5] == "COPY: ops decides this case."
    assert short.title.startswith("[copy] [escalate] Decision needed")
    mail = render(copy_for="ops")
    assert mail.body.splitlines()[1] == "COPY for your information: ops decides this case."
    assert mail.title.startswith("[copy] [escalate] Decision needed (medium): ")


def test_a_primary_message_carries_no_copy_marking() -> None:
    for reading in Reading:
        message = render(reading=reading)
        assert "COPY" not in message.body
        assert "[copy]" not in message.title


# --- nothing beyond the packet -------------------------------------------------------------------


def test_fields_outside_what_a_notification_shows_never_appear() -> None:
    # Given a (checked) packet with extra fields the notification has no line for
    packet = {
        **valid_packet(),
        "notes": "internal-only-5d1f",
        "env": {"DB_URL": "internal-only-9a2c"},
    }
    case = make_case(
        packet, snapshot={"proof": "internal-only-77b0"}, wake={"task": "internal-only.wake"}
    )
    # When rendered in every form, follow-up included
    for reading in Reading:
        texts = [render(case, reading=reading), render(case, copy_for="ops", reading=reading)]
        texts.append(
            render_follow_up(
                case, FACTS, public_url=PUBLIC_URL, at=AT, next_tier=True, reading=reading
            )
        )
        # Then none of them shows up anywhere
        for message in texts:
            for text in (message.title, message.body, message.html):
                assert "internal-only" not in text


# --- the follow-up -----------------------------------------------------------------------------


def test_the_follow_up_cites_the_packet_says_the_window_passed_and_when_the_run_blocked() -> None:
    # Given a case raised at AT and routed a second later, followed up an hour after
    case = make_case(created_at=AT, routed_at=AT + timedelta(seconds=1))
    later = AT + timedelta(hours=1)
    note = (
        "FOLLOW-UP on packet esc-2026-10-16-005: the response window (1h) passed with no decision."
    )
    short = render_follow_up(case, FACTS, public_url=PUBLIC_URL, at=later, reading=Reading.CHAT)
    assert short.title == (
        "[escalate] follow-up esc-2026-10-16-005: Decision needed (medium) · {{reply_token}}"
    )
    # Then it shows when the run blocked, not when it was sent, and still stands alone
    assert short.body.splitlines()[:5] == HEADLINE
    assert short.body.splitlines()[5] == note
    assert "{{reply_token}}" in short.body
    mail = render_follow_up(case, FACTS, public_url=PUBLIC_URL, at=later)
    assert mail.body.splitlines()[:2] == [
        "Decision needed in run-8842, blocked since 2026-10-16T09:30:15+00:00.",
        note,
    ]
    assert "Options:" in mail.body


def test_the_next_tier_follow_up_says_it_pages_the_next_tier() -> None:
    message = render_follow_up(make_case(), FACTS, public_url=PUBLIC_URL, at=AT, next_tier=True)
    assert message.body.splitlines()[1].endswith(
        "passed with no decision. You are paged as the next tier."
    )


def test_the_follow_up_is_never_marked_as_a_copy() -> None:
    message = render_follow_up(make_case(), FACTS, public_url=PUBLIC_URL, at=AT, next_tier=True)
    assert "COPY" not in message.body
    assert "[copy]" not in message.title


# --- helpers ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("plain", 200, "plain"),
        ("  a\n b\t\tc  \r\n", 200, "a b c"),
        ("", 200, ""),
        (None, 200, "None"),
        (42, 200, "42"),
        ("abcdef", 6, "abcdef"),
        ("abcdefg", 6, "abcde…"),
        ("a b c d", 4, "a b…"),
    ],
)
def test_one_line_collapses_whitespace_and_cuts_at_the_limit(
    text: object, limit: int, expected: str
) -> None:
    assert one_line(text, limit) == expected


def test_the_delivery_failure_detail_names_packet_case_target_attempts_and_error() -> None:
    detail = render_delivery_failure(
        make_case(), target="ops", attempts=5, error="HTTP 503\nService Unavailable"
    )
    assert detail == (
        f"Notification for packet esc-2026-10-16-005 (case {CASE_ID}) to 'ops' was not "
        "confirmed after 5 attempts; last error: HTTP 503 Service Unavailable"
    )


def test_the_delivery_failure_detail_is_capped_at_600_characters() -> None:
    detail = render_delivery_failure(make_case(), target="ops", attempts=5, error="e" * 2000)
    assert len(detail) == 600
    assert detail.endswith("…")


@pytest.mark.parametrize(
    ("run_id", "labels"),
    [("run-1\nsecond line", ["approve", "deny"]), ("run-8842", ["go\nnow", "stop"])],
)
def test_a_line_break_in_run_id_or_label_still_gives_a_five_line_headline(
    run_id: str, labels: list[str]
) -> None:
    packet = {**valid_packet(), "run_id": run_id}
    # parse_options refuses such labels at intake; rendering must defend anyway
    case = make_case(packet, options=tuple(Option(label, label) for label in labels))
    assert len("\n".join(headline(case, case.options, at=AT)).splitlines()) == 5
    assert render(case, reading=Reading.CHAT).body.splitlines()[4].startswith("Choices: ")
