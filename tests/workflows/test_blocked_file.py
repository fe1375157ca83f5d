"""BLOCKED.md for shell loops (SPEC §5): `# Blocked` and four sections, in order."""

from __future__ import annotations

from typing import Any

import pytest

from workflows.blocked_file import render_blocked
from workflows.case import Option, parse_options
from workflows.examples import valid_packet

HEADINGS = ["# Blocked", "## Question:", "## Context:", "## Attempted:", "## Choices:"]
CASE_ID = "3f2a9c1b7d4e"


def section(text: str, heading: str) -> list[str]:
    """The lines under one heading, up to the blank line that ends the section."""
    lines = text.splitlines()
    start = lines.index(heading) + 1
    end = lines.index("", start) if "" in lines[start:] else len(lines)
    return lines[start:end]


def test_given_the_valid_packet_then_the_file_reads_exactly_so() -> None:
    # Given the valid worked packet, the default options and the case id / When rendered
    text = render_blocked(valid_packet(), parse_options(None), escalation_id=CASE_ID)
    # Then
    assert text == "\n".join(
        [
            "# Blocked",
            "",
            "## Question:",
            "Skip the 3 orphan records, or create placeholder customers for them?",
            "",
            "## Context:",
            "- Task: Migrate 120 records and verify totals match source.",
            "- Run: run-8842 (packet esc-2026-10-16-005)",
            "- Why now: uncertain: Source has 120 records, target has 117; the 3 missing rows "
            "share customer ids absent from the target system.",
            "- Blocked on: Three source records have no matching customer in the target system.",
            f"- Escalation: {CASE_ID} (answer: escalate reply {CASE_ID} <choice>)",
            "",
            "## Attempted:",
            "- Re-ran the migration with a fresh target table.",
            "- Compared source and target ids; 3 ids have no target customer.",
            "",
            "## Choices:",
            "- A) approve — Do what the run asks, then resume.",
            "- B) deny — Do not do it; the run stops.",
            "",
        ]
    )


@pytest.mark.parametrize("escalation_id", [None, CASE_ID])
def test_the_headings_are_exactly_blocked_then_the_four_sections_in_order(
    escalation_id: str | None,
) -> None:
    text = render_blocked(valid_packet(), parse_options(None), escalation_id=escalation_id)
    assert [line for line in text.splitlines() if line.startswith("#")] == HEADINGS
    assert text.startswith("# Blocked\n")
    assert text.endswith("\n")
    assert not text.endswith("\n\n")


def test_each_section_is_preceded_by_a_blank_line() -> None:
    lines = render_blocked(valid_packet(), parse_options(None)).splitlines()
    for heading in HEADINGS[1:]:
        assert lines[lines.index(heading) - 1] == ""


def test_the_question_is_one_line_from_requested_action() -> None:
    # Given a question written over several lines
    packet = {**valid_packet(), "requested_action": "Skip the rows,\n  or create\tplaceholders?"}
    # Then it is one line under its heading
    text = render_blocked(packet, parse_options(None))
    assert section(text, "## Question:") == ["Skip the rows, or create placeholders?"]


def test_a_long_question_is_cut_at_400_characters() -> None:
    packet = {**valid_packet(), "requested_action": "word " * 200}
    (question,) = section(render_blocked(packet, ()), "## Question:")
    assert len(question) == 400
    assert question.endswith("…")


@pytest.mark.parametrize(("escalation_id", "count"), [(None, 4), (CASE_ID, 5)])
def test_the_context_is_three_to_six_lines(escalation_id: str | None, count: int) -> None:
    context = section(
        render_blocked(valid_packet(), parse_options(None), escalation_id=escalation_id),
        "## Context:",
    )
    assert len(context) == count
    assert 3 <= len(context) <= 6
    assert all(line.startswith("- ") for line in context)


def test_the_context_says_task_run_why_now_and_the_blocked_point() -> None:
    packet = valid_packet()
    context = section(render_blocked(packet, ()), "## Context:")
    assert context[0] == f"- Task: {packet['task_summary']}"
    assert context[1] == "- Run: run-8842 (packet esc-2026-10-16-005)"
    assert context[2] == f"- Why now: uncertain: {packet['trigger_detail']}"
    assert context[3] == f"- Blocked on: {packet['blocked_on']}"


def test_multi_line_context_fields_stay_one_line_each() -> None:
    packet = {
        **valid_packet(),
        "task_summary": "Migrate\nrecords.",
        "trigger_detail": "120 source,\n117 target.",
        "blocked_on": "Three\r\norphans.",
    }
    context = section(render_blocked(packet, ()), "## Context:")
    assert context[0] == "- Task: Migrate records."
    assert context[2] == "- Why now: uncertain: 120 source, 117 target."
    assert context[3] == "- Blocked on: Three orphans."


def test_the_attempted_steps_are_bullets_in_order() -> None:
    packet = {**valid_packet(), "attempted": ["First\ntry.", "Second try.", "Third try."]}
    attempted = section(render_blocked(packet, ()), "## Attempted:")
    assert attempted == ["- First try.", "- Second try.", "- Third try."]


def test_with_no_attempted_steps_the_section_still_has_a_bullet() -> None:
    packet: dict[str, Any] = {**valid_packet(), "attempted": []}
    assert section(render_blocked(packet, ()), "## Attempted:") == ["- (none)"]


def test_the_choices_are_lettered_with_their_consequence() -> None:
    # Given options with a description, and without one (resuming and stopping)
    options = (
        Option("Use backup", "backup", "Restore\nlast night's copy."),
        Option("Retry", "retry"),
        Option("Stop", "stop", resumes=False),
    )
    # Then each reads "- A) option — consequence"
    assert section(render_blocked(valid_packet(), options), "## Choices:") == [
        "- A) Use backup — Restore last night's copy.",
        "- B) Retry — resume",
        "- C) Stop — stop",
    ]


def test_the_choices_are_the_last_section_and_end_the_file() -> None:
    text = render_blocked(valid_packet(), parse_options(["retry", "stop"]))
    assert text.splitlines()[-2:] == ["- A) retry — resume", "- B) stop — stop"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("run_id", "run-1\n## Injected"),
        ("packet_id", "esc-1\n# Injected"),
        ("label", "go\n## Injected"),
    ],
)
def test_a_line_break_in_ids_or_labels_never_adds_a_heading(field: str, value: str) -> None:
    packet = valid_packet()
    options = parse_options(["retry", "stop"])
    if field == "label":  # parse_options refuses this at intake; render defends anyway
        options = (Option(value, "go"), *parse_options(["stop"]))
    else:
        packet[field] = value
    text = render_blocked(packet, options)
    assert [line for line in text.splitlines() if line.startswith("#")] == HEADINGS
    assert len(section(text, "## Context:")) == 4
    assert len(section(text, "## Choices:")) == 2
