"""BLOCKED.md for shell loops (SPEC §5), and the DECISION.md and decisions.log that unblock it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any

from workflows.case import Option
from workflows.reasons import reason_line
from workflows.text import one_line

DECISION_FILE = "DECISION.md"
DECISIONS_LOG = "decisions.log"
RESUME = "Resume: the decision clears this one point only."
STOP = "Stop: do not continue this work; the remaining work is discarded."
RECONCILE = "Reconcile first: the state changed since the snapshot; then resume."


def _escalation_line(escalation_id: str) -> str:
    return f"- Escalation: {escalation_id} (answer: escalate reply {escalation_id} <choice>)"


def render_blocked(
    packet: Mapping[str, Any],
    options: Sequence[Option],
    *,
    escalation_id: str | None = None,
    filing_error: str | None = None,
) -> str:
    """The file a loop runner stops on; `filing_error` says the escalation was not filed."""
    context = [
        f"- Task: {one_line(packet.get('task_summary', ''))}",
        f"- Run: {one_line(packet.get('run_id'))} (packet {one_line(packet.get('packet_id'))})",
        f"- Why now: {one_line(packet.get('trigger_type', ''))}: "
        f"{one_line(packet.get('trigger_detail', ''))}",
        f"- Blocked on: {one_line(packet.get('blocked_on', ''))}",
    ]
    if escalation_id:
        context.append(_escalation_line(one_line(escalation_id)))
    elif filing_error:
        context.append(
            f"- Escalation: NOT FILED, nobody may have been asked: {one_line(filing_error, 400)}"
            " (fix it and raise again, or decide yourself and remove this file)"
        )
    attempted = [f"- {one_line(step)}" for step in packet.get("attempted", [])] or ["- (none)"]
    letters = "ABCDEFGHIJ"
    choices = [
        f"- {letters[i]}) {one_line(option.label)} — "
        f"{one_line(option.description) or ('resume' if option.resumes else 'stop')}"
        for i, option in enumerate(options[: len(letters)])
    ]
    return "\n".join(
        [
            "# Blocked",
            "",
            "## Question:",
            one_line(packet.get("requested_action", ""), 400),
            "",
            "## Context:",
            *context,
            "",
            "## Attempted:",
            *attempted,
            "",
            "## Choices:",
            *choices,
            "",
        ]
    )


def names_case(blocked_text: str, escalation_id: str) -> bool:
    """Whether a BLOCKED.md was written for this case (only then may its decision remove it)."""
    return blocked_text.startswith("# Blocked\n") and (
        _escalation_line(escalation_id) in blocked_text.splitlines()
    )


def unblock_paths(blocked_file: str) -> tuple[str, str]:
    """DECISION.md and decisions.log sit next to BLOCKED.md, where the next iteration looks."""
    blocked = PurePath(blocked_file)
    return str(blocked.with_name(DECISION_FILE)), str(blocked.with_name(DECISIONS_LOG))


def _decided_by(close: Mapping[str, Any]) -> str:
    """Who decided, as the run's files say it: a person via a channel, or nobody."""
    if close.get("is_default"):
        return "nobody (the timeout default applied)"
    return f"{one_line(close.get('decided_by') or '')} via {one_line(close.get('channel', ''))}"


def render_decision(
    close: Mapping[str, Any],
    *,
    escalation_id: str,
    run_id: str,
    packet_id: str,
    question: str,
    closed_at: str,
) -> str:
    """DECISION.md from a close entry: the question, the decision, who, when and the outcome."""
    outcome = one_line(close.get("outcome", ""))
    resumes = bool(close.get("resumes"))
    by = _decided_by(close)
    lines = [
        "# Decision",
        "",
        "## Question:",
        one_line(question, 400),
        "",
        "## Decision:",
        f"- Case: {one_line(escalation_id)} (run {one_line(run_id)}, packet {one_line(packet_id)})",
        f"- Option: {one_line(close.get('option', ''))}",
        f"- Value: {one_line(close.get('value', ''))}",
        f"- Decided by: {by}",
        f"- When: {one_line(closed_at)}",
        f"- Outcome: {outcome}",
        f"- Recheck: {one_line(close.get('recheck', ''), 400)}",
        "",
        *_reasons_section(close.get("reasons") or []),
        "## Next:",
        RECONCILE if outcome == "reconcile_first" else RESUME if resumes else STOP,
    ]
    if resumes and close.get("clears"):
        lines.append(f"Cleared: {one_line(close['clears'], 400)}")
    if not resumes and close.get("work_discarded"):
        discarded = "; ".join(str(item) for item in close["work_discarded"])
        lines.append(f"Discarded: {one_line(discarded, 400)}")
    return "\n".join([*lines, ""])


def _reasons_section(reasons: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the operators said while handling the case (acknowledged, extended, reassigned)."""
    if not reasons:
        return []
    return ["## Reasons:", *(f"- {reason_line(reason)}" for reason in reasons), ""]


def decision_log_line(close: Mapping[str, Any], *, escalation_id: str, closed_at: str) -> str:
    """One tab-separated line per case: ISO time, case id, option, outcome, who."""
    fields = (closed_at, escalation_id, close.get("option"), close.get("outcome"))
    by = "timeout default" if close.get("is_default") else close.get("decided_by") or ""
    return "\t".join([*(one_line(f) for f in fields), one_line(by)])


def is_logged(log_text: str, escalation_id: str) -> bool:
    """Whether decisions.log already has this case's line (the log is keyed by case id)."""
    return any(line.split("\t")[1:2] == [escalation_id] for line in log_text.splitlines())


# loopkit's run.sh has the agent read PROMPT.md and IMPLEMENTATION_PLAN.md each turn: the
# decision is appended there (when the plan exists) so the next iteration sees it.
PLAN_FILE = "IMPLEMENTATION_PLAN.md"
DECISIONS_HEADING = "## Decisions"


def plan_path(blocked_file: str) -> str:
    """IMPLEMENTATION_PLAN.md beside BLOCKED.md, at the repo root where run.sh works."""
    return str(PurePath(blocked_file).with_name(PLAN_FILE))


def _entry_line(escalation_id: str) -> str:
    return f"### Case {escalation_id}"


def render_plan_entry(
    close: Mapping[str, Any], *, escalation_id: str, question: str, closed_at: str
) -> str:
    """One decision as the next iteration reads it; no line can pass for run.sh's
    `STATUS: done` (every line is a heading or a bullet)."""
    outcome = one_line(close.get("outcome", ""))
    resumes = bool(close.get("resumes"))
    by = _decided_by(close)
    next_step = RECONCILE if outcome == "reconcile_first" else RESUME if resumes else STOP
    return "\n".join(
        [
            _entry_line(one_line(escalation_id)),
            f"- Question: {one_line(question, 400)}",
            f"- Decision: {one_line(close.get('option', ''))} ({outcome}), {one_line(closed_at)}",
            f"- Decided by: {by}",
            f"- Next: {next_step}",
            "",
        ]
    )


def with_plan_entry(text: str, entry: str, escalation_id: str) -> str | None:
    """What to append to a plan (or decision file) holding `text`: the entry, under a
    Decisions heading when the file's last section is another; None when it is there."""
    lines = text.splitlines()
    if _entry_line(escalation_id) in lines:
        return None
    headings = [line for line in lines if line.startswith("## ")]
    prefix = "" if not text or text.endswith("\n") else "\n"
    if not headings or headings[-1].strip() != DECISIONS_HEADING:
        prefix += ("\n" if text else "") + DECISIONS_HEADING + "\n\n"
    elif text and not text.endswith("\n\n"):
        prefix += "\n"
    return prefix + entry
