"""What a dashboard and a phone show of a case (SPEC §4): the advisory and the prompt form."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from workflows.case import Case, Option
from workflows.text import one_line

ADVISORY_LIMIT = 200
QUESTION_LIMIT = 120
FORM_OPTIONS = 3
LABEL_LIMIT = 24


def advisory(case: Case) -> dict[str, str]:
    """`summary` and `recommended_action`, ≤ 200 characters each; a pipeline's own when it has one.

    Outside pipelines the service knows no better answer than the run does, so it recommends
    none: it says what is to be decided, between which answers.
    """
    stored = case.pipeline.get("advisory") if case.pipeline else None
    if isinstance(stored, Mapping) and {"summary", "recommended_action"} <= set(stored):
        return {
            key: one_line(stored[key], ADVISORY_LIMIT) for key in ("summary", "recommended_action")
        }
    packet = case.packet
    summary = (
        f"{case.run_id} stopped ({packet.get('severity')}, {packet.get('trigger_type')}): "
        f"{packet.get('blocked_on', '')}"
    )
    choices = " | ".join(option.label for option in case.options)
    return {
        "summary": one_line(summary, ADVISORY_LIMIT),
        "recommended_action": one_line(
            f"Choose {choices}: {packet.get('requested_action', '')}", ADVISORY_LIMIT
        ),
    }


@dataclass(frozen=True)
class FormOption:
    """One button: the label shown (≤ 24 characters) and the option it answers."""

    text: str
    option: Option


@dataclass(frozen=True)
class PromptForm:
    """The mobile prompt form: a short question, up to three buttons, the stated default."""

    question: str
    options: tuple[FormOption, ...]
    more: int  # answers not shown as buttons (on the full case page)
    default: str


def _first_options(case: Case) -> list[Option]:
    """Up to three answers: a pipeline's recommended command and STOP first, then in order."""
    options = list(case.options)
    if case.pipeline:
        recommended = advisory(case)["recommended_action"].split(":")[0]
        options.sort(key=lambda option: (option.label != recommended, option.label != "STOP"))
    return options[:FORM_OPTIONS]


def what_happens(timeout_action: str) -> str:
    """What the timeout does, as a person reads it: a default, or nothing (hold)."""
    if timeout_action == "hold":
        return "nothing is applied: the tiers above are paged and the run waits for a person"
    return f"the default applies: {timeout_action}"


def prompt_form(case: Case, *, timeout_action: str, deadline: datetime | None) -> PromptForm:
    """The form a phone shows; the full question and every answer stay on the case page."""
    shown = _first_options(case)
    when = f" at {deadline.isoformat(timespec='minutes')}" if deadline else ""
    texts = [one_line(o.label, LABEL_LIMIT) for o in shown]
    if len(set(texts)) < len(texts):  # long labels cut alike: number them so they differ
        texts = [one_line(f"{i}. {o.label}", LABEL_LIMIT) for i, o in enumerate(shown, 1)]
    return PromptForm(
        question=one_line(case.packet.get("requested_action", ""), QUESTION_LIMIT),
        options=tuple(FormOption(text, o) for text, o in zip(texts, shown, strict=True)),
        more=len(case.options) - len(shown),
        default=f"If nobody answers{when}, {what_happens(timeout_action)}.",
    )
