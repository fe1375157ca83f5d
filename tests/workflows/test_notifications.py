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


def test_the_body_opens_with_the_headline() -> None:
    # Given the first notification / Then its first five lines are the headline, in order
    assert render().body.splitlines()[:5] == HEADLINE


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


# --- the rest of the first notification ------------------------------------------------------


def test_the_body_states_severity_trigger_blocked_point_and_failure_text() -> None:
    body = render().body.splitlines()
    packet = valid_packet()
    assert "Severity: medium · trigger: uncertain" in body
    assert f"Blocked on: {packet['blocked_on']}" in body
    assert f"Failure: {packet['trigger_detail']}" in body


def test_given_phase_and_component_then_they_are_stated() -> None:
    # Given a pipeline packet that names the failed phase and component (§4, §6)
    packet = {**valid_packet(), "phase": "3: migrate\ncustomers", "component": "executor"}
    body = render(make_case(packet)).body.splitlines()
    assert "Phase: 3: migrate customers" in body
    assert "Component: executor" in body


def test_without_phase_or_component_then_neither_line_appears() -> None:
    body = render().body
    assert "Phase:" not in body
    assert "Component:" not in body


def test_the_evidence_references_are_listed_with_their_kinds() -> None:
    body = render().body.splitlines()
    start = body.index("Evidence:")
    assert body[start + 1 : start + 3] == [
        "- log: logs/migrate-run-8842.log",
        "- artifact: artifacts/orphan-ids.csv",
    ]


def test_each_option_is_listed_with_its_one_line_description() -> None:
    # Given options with and without descriptions
    options = parse_options(
        [
            {"label": "Use backup", "value": "backup", "description": "Restore\nlast night."},
            "retry",
        ]
    )
    body = render(make_case(options=options)).body.splitlines()
    start = body.index("Options:")
    assert body[start + 1 : start + 3] == ["- Use backup — Restore last night.", "- retry"]


def test_the_default_options_are_listed_with_their_descriptions() -> None:
    body = render().body.splitlines()
    start = body.index("Options:")
    assert body[start + 1 : start + 3] == [
        "- approve — Do what the run asks, then resume.",
        "- deny — Do not do it; the run stops.",
    ]


def test_how_to_answer_offers_the_code_a_link_per_option_the_cli_and_details() -> None:
    body = render().body.splitlines()
    start = body.index("How to answer:")
    # The code and links are markers here, filled per channel at send time
    assert body[start + 1 : start + 8] == [
        "- reply on this channel starting with the code: {{reply_token}} approve",
        "- or open a link:",
        "  approve: {{link:approve}}",
        "  deny: {{link:deny}}",
        f"- or the dashboard: {PUBLIC_URL}/dashboard/cases/{CASE_ID}",
        f"- or: escalate reply {CASE_ID} approve",
        f"- details: GET {PUBLIC_URL}/v1/escalations/{CASE_ID} (operator token)",
    ]


def test_markers_are_filled_with_the_code_and_this_channels_links() -> None:
    body = fill_markers(
        render().body,
        token="K7Q2MX9D4P",
        links={"approve": "https://x/a/1", "deny": "https://x/a/2"},
    )
    assert "starting with the code: K7Q2MX9D4P approve" in body
    assert "  approve: https://x/a/1" in body and "  deny: https://x/a/2" in body
    assert "{{" not in body


def test_how_to_answer_uses_the_first_option_as_its_example() -> None:
    options = parse_options(["Retry", "Stop"])
    body = render(make_case(options=options)).body
    assert "starting with the code: {{reply_token}} Retry" in body
    assert f"- or: escalate reply {CASE_ID} Retry" in body


@pytest.mark.parametrize(
    ("facts", "sentence"),
    [
        (
            FACTS,
            "While waiting the run is read_only. If nobody decides within 2h, "
            "the default applies: queue.",
        ),
        (
            RouteFacts(
                "critical", timedelta(minutes=5), timedelta(minutes=30), "abort", "stopped", "d v1"
            ),
            "While waiting the run is stopped. If nobody decides within 30m, "
            "the default applies: abort.",
        ),
        (
            RouteFacts(
                "low",
                timedelta(hours=1),
                timedelta(hours=1, minutes=30),
                "skip",
                "safe_subset",
                "d v1",
            ),
            "While waiting the run is safe_subset. If nobody decides within 1h30m, "
            "the default applies: skip.",
        ),
    ],
)
def test_the_waiting_behavior_and_the_default_on_timeout_are_stated(
    facts: RouteFacts, sentence: str
) -> None:
    assert sentence in render(facts=facts).body.splitlines()


def test_the_last_line_names_case_packet_and_design() -> None:
    assert render().body.splitlines()[-1] == (
        f"Case {CASE_ID} · packet esc-2026-10-16-005 · design example v3"
    )


def test_the_title_states_severity_and_blocked_point() -> None:
    assert render().title == (
        "[escalate] medium: Three source records have no matching customer in the target system."
    )


def test_the_title_is_one_line_and_cut_at_100_characters_of_blocked_on() -> None:
    packet = {**valid_packet(), "blocked_on": "x\ny " * 80}
    title = render(make_case(packet)).title
    assert "\n" not in title
    assert len(title.removeprefix("[escalate] medium: ")) == 100
    assert title.endswith("…")


def test_the_facts_from_the_design_reach_the_message() -> None:
    # Given a harm_risk packet routed by the example design / Then abort is stated as the default
    packet = {**valid_packet(), "severity": "high", "trigger_type": "harm_risk"}
    packet["waiting_behavior"] = "paused"
    case = make_case(packet)
    body = render(case, facts=route_facts(DESIGN, case)).body
    assert "If nobody decides within 1h, the default applies: abort." in body
    assert "Severity: high · trigger: harm_risk" in body
    assert body.endswith("design example v3")


# --- copies -----------------------------------------------------------------------------------


def test_a_copy_is_marked_in_title_and_body_and_names_the_primary() -> None:
    # When rendered for a copy recipient
    message = render(copy_for="ops")
    lines = message.body.splitlines()
    # Then the headline still comes first, and the copy marking right after it
    assert lines[:5] == HEADLINE
    assert lines[5:7] == ["", "COPY for your information: ops decides this case."]
    assert message.title.startswith("[copy] [escalate] medium: ")


def test_a_primary_message_carries_no_copy_marking() -> None:
    message = render()
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
    # When rendered, follow-up included
    texts = [render(case), render(case, copy_for="ops")]
    texts.append(render_follow_up(case, FACTS, public_url=PUBLIC_URL, at=AT, next_tier=True))
    # Then none of them shows up anywhere
    for message in texts:
        for text in (message.title, message.body):
            assert "internal-only" not in text


# --- the follow-up -----------------------------------------------------------------------------


def test_the_follow_up_cites_the_packet_and_says_the_window_passed() -> None:
    message = render_follow_up(make_case(), FACTS, public_url=PUBLIC_URL, at=AT)
    lines = message.body.splitlines()
    assert message.title == "[escalate] follow-up esc-2026-10-16-005: window passed"
    assert lines[0] == (
        "FOLLOW-UP on packet esc-2026-10-16-005: the response window (1h) passed with no decision."
    )
    # and it still stands alone: the full notification follows
    assert lines[1] == ""
    assert lines[2:7] == HEADLINE
    assert "How to answer:" in lines


def test_the_next_tier_follow_up_says_it_pages_the_next_tier() -> None:
    message = render_follow_up(make_case(), FACTS, public_url=PUBLIC_URL, at=AT, next_tier=True)
    assert message.body.splitlines()[0].endswith(
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
    assert render(case).body.splitlines()[4].startswith("Choices: ")


# --- the advisory and the phone-sized form (SPEC §4) --------------------------------------------


def test_every_notification_carries_the_advisory_and_a_phone_sized_form() -> None:
    labels = [f"Create placeholder customers number {i}" for i in range(5)]
    packet = {**valid_packet(), "requested_action": "Which of these? " + "Really. " * 30}
    body = render(make_case(packet, options=parse_options(labels))).body.splitlines()
    summary = next(line for line in body if line.startswith("Summary: "))
    recommended = next(line for line in body if line.startswith("Recommended: "))
    assert len(summary.removeprefix("Summary: ")) <= 200
    assert len(recommended.removeprefix("Recommended: ")) <= 200
    phone = body.index(next(line for line in body if line.startswith("On a phone: ")))
    question = body[phone].removeprefix("On a phone: ")
    assert len(question) <= 120 and question.startswith("Which of these? Really.")
    answers = body[phone + 1].removeprefix("  Answers: ")
    shown, more = answers.split(" (+")
    assert [len(label) <= 24 for label in shown.split(" | ")] == [True, True, True]
    assert more == "2 more below)"
    # The default and when it applies: routed at AT, the medium tier times out 2 h later
    assert (
        body[phone + 2]
        == "  If nobody answers at 2026-10-16T11:30+00:00, the default applies: queue."
    )
