"""BLOCKED.md for shell loops (SPEC §5): `# Blocked` and four sections, in order."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from workflows.blocked_file import (
    decision_log_line,
    is_logged,
    names_case,
    render_blocked,
    render_decision,
    render_plan_entry,
    unblock_paths,
)
from workflows.case import Case, Option, parse_options
from workflows.closing import close_case
from workflows.examples import valid_packet
from workflows.stage_results import DecisionSpec, Outbound
from workflows.states import State

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


# --- a filing that failed still stops the loop, and says so ------------------------------


def test_given_a_filing_error_then_the_context_says_it_was_not_filed() -> None:
    text = render_blocked(
        valid_packet(), parse_options(None), filing_error="the service refused the packet:\nx"
    )
    context = section(text, "## Context:")
    assert len(context) == 5
    assert context[-1].startswith(
        "- Escalation: NOT FILED, nobody may have been asked: the service refused the packet: x"
    )
    assert [line for line in text.splitlines() if line.startswith("#")] == HEADINGS


def test_a_case_id_wins_over_a_filing_error() -> None:
    text = render_blocked(valid_packet(), (), escalation_id=CASE_ID, filing_error="down")
    assert "NOT FILED" not in text
    assert names_case(text, CASE_ID)


# --- which BLOCKED.md a decision may remove -----------------------------------------------


def test_only_the_blocked_file_written_for_a_case_names_it() -> None:
    ours = render_blocked(valid_packet(), (), escalation_id=CASE_ID)
    assert names_case(ours, CASE_ID)
    assert not names_case(ours, "000000000000")
    assert not names_case(render_blocked(valid_packet(), (), filing_error="down"), CASE_ID)
    assert not names_case(render_blocked(valid_packet(), ()), CASE_ID)
    assert not names_case(f"notes\n{ours}", CASE_ID)  # not a BLOCKED.md at all


def test_the_decision_and_the_log_sit_next_to_blocked_md() -> None:
    assert unblock_paths("/work/run/BLOCKED.md") == (
        "/work/run/DECISION.md",
        "/work/run/decisions.log",
    )
    assert unblock_paths("/work/run/STOP-HERE.md")[0] == "/work/run/DECISION.md"


# --- DECISION.md and decisions.log ----------------------------------------------------------

CLOSED_AT = "2026-10-16T09:30:00+00:00"


def close_entry(**changes: Any) -> dict[str, Any]:
    return {
        "option": "approve",
        "value": "approve",
        "decided_by": "ana",
        "channel": "api",
        "is_default": False,
        "outcome": "decided",
        "resumes": True,
        "recheck": "the state fingerprint is unchanged",
        "resume_at": CLOSED_AT,
        "clears": "Three source records have no matching customer.",
        "work_discarded": [],
        **changes,
    }


def decision_text(close: dict[str, Any]) -> str:
    return render_decision(
        close,
        escalation_id=CASE_ID,
        run_id="run-8842",
        packet_id="esc-2026-10-16-005",
        question="Skip the 3 orphan records?",
        closed_at=CLOSED_AT,
    )


def test_given_a_human_decision_then_decision_md_reads_exactly_so() -> None:
    assert decision_text(close_entry()) == "\n".join(
        [
            "# Decision",
            "",
            "## Question:",
            "Skip the 3 orphan records?",
            "",
            "## Decision:",
            f"- Case: {CASE_ID} (run run-8842, packet esc-2026-10-16-005)",
            "- Option: approve",
            "- Value: approve",
            "- Decided by: ana via api",
            f"- When: {CLOSED_AT}",
            "- Outcome: decided",
            "- Recheck: the state fingerprint is unchanged",
            "",
            "## Next:",
            "Resume: the decision clears this one point only.",
            "Cleared: Three source records have no matching customer.",
            "",
        ]
    )


@pytest.mark.parametrize(
    ("outcome", "resumes", "advice"),
    [
        ("decided", False, "Stop: do not continue this work; the remaining work is discarded."),
        ("defaulted", False, "Stop: do not continue this work; the remaining work is discarded."),
        ("defaulted", True, "Resume: the decision clears this one point only."),
        (
            "reconcile_first",
            True,
            "Reconcile first: the state changed since the snapshot; then resume.",
        ),
    ],
)
def test_the_next_step_follows_the_outcome(outcome: str, resumes: bool, advice: str) -> None:
    text = decision_text(close_entry(outcome=outcome, resumes=resumes))
    assert f"- Outcome: {outcome}" in text.splitlines()
    assert section(text + "\n", "## Next:")[0] == advice
    assert ("Cleared:" in text) is resumes


def test_a_stop_names_the_work_it_discards() -> None:
    text = decision_text(close_entry(resumes=False, work_discarded=["Verify totals.", "Ship."]))
    assert text.splitlines()[-1] == "Discarded: Verify totals.; Ship."


def test_a_timeout_default_says_it_was_not_a_human() -> None:
    text = decision_text(close_entry(decided_by=None, is_default=True, outcome="defaulted"))
    assert "- Decided by: nobody (the timeout default applied)" in text.splitlines()
    assert "- Outcome: defaulted" in text.splitlines()


def test_a_line_break_in_a_decision_field_never_adds_a_line() -> None:
    plain = decision_text(close_entry())
    text = decision_text(close_entry(decided_by="ana\n## Injected", recheck="a\nb"))
    assert len(text.splitlines()) == len(plain.splitlines())
    assert [line for line in text.splitlines() if line.startswith("#")] == [
        "# Decision",
        "## Question:",
        "## Decision:",
        "## Next:",
    ]


def test_the_log_line_is_time_case_option_outcome_who() -> None:
    line = decision_log_line(
        close_entry(decided_by="ana\tb"), escalation_id=CASE_ID, closed_at=CLOSED_AT
    )
    assert line.split("\t") == [CLOSED_AT, CASE_ID, "approve", "decided", "ana b"]
    assert "\n" not in line


def test_the_log_is_keyed_by_case_id() -> None:
    line = decision_log_line(close_entry(), escalation_id=CASE_ID, closed_at=CLOSED_AT)
    assert is_logged(f"{line}\n", CASE_ID)
    assert not is_logged(f"{line}\n", "000000000000")
    assert not is_logged(f"{CASE_ID} mentioned in a note\n", CASE_ID)
    assert not is_logged("", CASE_ID)


# --- the close stage queues the unblock -------------------------------------------------------

NOW = datetime(2026, 10, 16, 9, 30, tzinfo=UTC)


def decided_case(wake: dict[str, Any]) -> Case:
    packet = valid_packet()
    return Case(
        id=CASE_ID,
        run_id=packet["run_id"],
        packet_id=packet["packet_id"],
        state=State.DECIDED,
        packet=packet,
        options=parse_options(None),
        wake=wake,
    )


def test_given_a_blocked_file_wake_then_closing_queues_one_unblock_with_the_rendered_files() -> (
    None
):
    # Given a case raised by a shell loop with --blocked-file
    case = decided_case({"blocked_file": "/runs/r1/BLOCKED.md"})
    decision = DecisionSpec("approve", "approve", True, "ana", "api")
    # When it closes
    result = close_case(case, decision, current=None, probe_error=None, now=NOW)
    # Then one file outbound carries the paths and DECISION.md as the close entry says
    close = result.events[0].detail
    (unblock,) = result.outbound
    assert unblock == Outbound(
        "unblock",
        "file",
        "/runs/r1/BLOCKED.md",
        payload={
            "escalation_id": CASE_ID,
            "blocked_file": "/runs/r1/BLOCKED.md",
            "decision_file": "/runs/r1/DECISION.md",
            "decisions_log": "/runs/r1/decisions.log",
            "decision_md": render_decision(
                close,
                escalation_id=CASE_ID,
                run_id="run-8842",
                packet_id="esc-2026-10-16-005",
                question=valid_packet()["requested_action"],
                closed_at=NOW.isoformat(),
            ),
            "log_line": decision_log_line(close, escalation_id=CASE_ID, closed_at=NOW.isoformat()),
            # loopkit's run.sh has the agent read IMPLEMENTATION_PLAN.md: the decision too
            "plan_file": "/runs/r1/IMPLEMENTATION_PLAN.md",
            "plan_entry": render_plan_entry(
                close,
                escalation_id=CASE_ID,
                question=valid_packet()["requested_action"],
                closed_at=NOW.isoformat(),
            ),
        },
    )
    assert "- Outcome: decided" in unblock.payload["decision_md"].splitlines()
    assert result.next_stage == "deliver"


def test_the_unblock_comes_after_the_other_wake_ups() -> None:
    case = decided_case({"task": "agent.resume", "blocked_file": "/runs/r1/BLOCKED.md"})
    decision = DecisionSpec("deny", "deny", False, "ana", "api")
    result = close_case(case, decision, current=None, probe_error=None, now=NOW)
    assert [(o.purpose, o.channel) for o in result.outbound] == [
        ("wake_task", "celery"),
        ("unblock", "file"),
    ]
    assert "- Outcome: decided" in result.outbound[1].payload["decision_md"].splitlines()
    assert "Discarded:" in result.outbound[1].payload["decision_md"]


def test_a_decision_goes_under_the_plans_decisions_heading_once() -> None:
    from workflows.blocked_file import with_plan_entry

    close = {"option": "sqlite", "outcome": "decided", "resumes": True, "decided_by": "ana"}
    entry = render_plan_entry(close, escalation_id="e1", question="Which db?", closed_at="T")
    plan = "# Plan\n\n## Tasks\n- [ ] carts\nSTATUS: in progress"
    added = with_plan_entry(plan, entry, "e1")
    assert added is not None and added.startswith("\n\n## Decisions\n\n### Case e1\n")
    after = plan + added
    assert with_plan_entry(after, entry, "e1") is None  # the same case twice: once
    second = render_plan_entry(close, escalation_id="e2", question="Q2", closed_at="T")
    more = with_plan_entry(after, second, "e2")
    assert more is not None and "## Decisions" not in more  # under the same heading
    assert with_plan_entry("", entry, "e1") == "## Decisions\n\n" + entry
    assert all(line.startswith(("#", "-")) for line in entry.splitlines() if line)


def test_what_operators_said_while_handling_the_case_is_in_decision_md() -> None:
    reasons = [
        {"what": "acknowledged", "who": "dashboard:ana", "when": CLOSED_AT, "why": "on it"},
        {"what": "reassigned", "who": "api:bo", "when": CLOSED_AT, "why": "on-call owns it",
         "from": "medium", "to": "high"},
    ]  # fmt: skip
    text = decision_text(close_entry(reasons=reasons))
    assert section(text + "\n", "## Reasons:") == [
        f"- acknowledged by dashboard:ana at {CLOSED_AT}: on it",
        f"- reassigned from medium to high by api:bo at {CLOSED_AT}: on-call owns it",
    ]
    assert text.index("## Reasons:") < text.index("## Next:")
