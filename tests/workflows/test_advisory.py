"""The dashboard advisory and the mobile prompt form (SPEC §4)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from workflows.advisory import advisory, prompt_form
from workflows.case import Case, parse_options
from workflows.examples import valid_packet
from workflows.states import State


def case_of(packet: dict[str, Any], options: list[Any], **pipeline: Any) -> Case:
    return Case(
        id="c1",
        run_id=packet["run_id"],
        packet_id=packet["packet_id"],
        state=State.AWAITING,
        packet=packet,
        options=parse_options(options),
        pipeline=pipeline,
    )


def test_a_plain_case_is_summarised_and_names_its_answers_without_picking_one() -> None:
    packet = {**valid_packet(), "blocked_on": "x" * 400}
    advice = advisory(case_of(packet, ["approve", "deny"]))
    assert set(advice) == {"summary", "recommended_action"}
    assert all(len(text) <= 200 for text in advice.values())
    assert advice["summary"].startswith(f"{packet['run_id']} stopped (medium, uncertain): xxx")
    assert advice["summary"].endswith("…")
    assert advice["recommended_action"].startswith("Choose approve | deny: ")


def test_a_pipeline_case_shows_its_own_advisory() -> None:
    stored = {"summary": "Phase 3 executor failed", "recommended_action": "RESET_EXECUTION: x"}
    case = case_of(valid_packet(), ["RESET_PHASE", "RESET_EXECUTION", "STOP"], advisory=stored)
    assert advisory(case) == stored


@pytest.mark.parametrize("count", [1, 2, 3, 4, 6])
def test_the_form_has_a_short_question_three_short_buttons_at_most_and_the_default(
    count: int,
) -> None:
    packet = {**valid_packet(), "requested_action": "Should the run " + "really " * 40 + "go?"}
    labels = [f"Option number {i} with a long label" for i in range(count)]
    deadline = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
    form = prompt_form(case_of(packet, labels), timeout_action="queue", deadline=deadline)
    assert len(form.question) <= 120 and form.question.startswith("Should the run really")
    assert len(form.options) == min(count, 3) and form.more == count - len(form.options)
    assert all(len(button.text) <= 24 for button in form.options)
    assert [b.option.label for b in form.options] == labels[:3]  # buttons answer the full label
    assert (
        form.default == "If nobody answers at 2026-12-01T09:30+00:00, the default applies: queue."
    )


def test_a_pipeline_form_puts_the_recommended_command_first() -> None:
    commands = ["RESET_EXECUTION", "RESET_PHASE", "RESET_REVIEWER", "PROCEED", "STOP"]
    stored = {"summary": "s", "recommended_action": "RESET_REVIEWER: re-run the review"}
    case = case_of(valid_packet(), commands, advisory=stored)
    form = prompt_form(case, timeout_action="STOP", deadline=None)
    assert [b.option.label for b in form.options] == [
        "RESET_REVIEWER",
        "STOP",
        "RESET_EXECUTION",
    ]
    assert form.more == 2
    assert form.default == "If nobody answers, the default applies: STOP."


def test_long_labels_cut_alike_are_numbered_so_the_buttons_differ() -> None:
    labels = [f"Create placeholder customers for batch {i}" for i in (1, 2)]
    form = prompt_form(case_of(valid_packet(), labels), timeout_action="queue", deadline=None)
    texts = [button.text for button in form.options]
    assert texts == ["1. Create placeholder c…", "2. Create placeholder c…"]
    assert all(len(text) <= 24 for text in texts)
