"""BLOCKED.md for shell loops (SPEC §5): exactly four sections, in order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from workflows.case import Option
from workflows.notifications import one_line


def render_blocked(
    packet: Mapping[str, Any], options: Sequence[Option], *, escalation_id: str | None = None
) -> str:
    """The file a loop runner stops on; its removal is the unblock signal."""
    context = [
        f"- Task: {one_line(packet.get('task_summary', ''))}",
        f"- Run: {one_line(packet.get('run_id'))} (packet {one_line(packet.get('packet_id'))})",
        f"- Why now: {one_line(packet.get('trigger_type', ''))}: "
        f"{one_line(packet.get('trigger_detail', ''))}",
        f"- Blocked on: {one_line(packet.get('blocked_on', ''))}",
    ]
    if escalation_id:
        context.append(
            f"- Escalation: {escalation_id} (answer: escalate reply {escalation_id} <choice>)"
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
