"""What the operator reads (SPEC §4): every message stands alone, secrets never appear."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from workflows.advisory import advisory, prompt_form, what_happens
from workflows.case import Case, Option
from workflows.durations import format_duration
from workflows.text import one_line


@dataclass(frozen=True)
class Message:
    """A rendered notification: apprise's title and body."""

    title: str
    body: str


@dataclass(frozen=True)
class RouteFacts:
    """The routing facts a message states: severity, windows, default, design."""

    severity: str
    window: timedelta
    timeout: timedelta
    timeout_action: str
    waiting_behavior: str
    design: str


# Filled in at send time (workers/answering.py): the outbox never holds a live token or link.
TOKEN_MARKER = "{{reply_token}}"


def link_marker(label: str) -> str:
    return "{{link:" + label + "}}"


def fill_markers(text: str, *, token: str, links: Mapping[str, str]) -> str:
    """Put the case's reply token and this channel's answer links into a rendered message."""
    text = text.replace(TOKEN_MARKER, token)
    for label, url in links.items():
        text = text.replace(link_marker(label), url)
    return text


def headline(case: Case, options: Sequence[Option], *, at: datetime) -> list[str]:
    """The five headline lines, in order."""
    packet = case.packet
    attempted = "; ".join(str(step) for step in packet.get("attempted", []))
    return [
        f"[escalate] blocked in {one_line(case.run_id)} on {at.isoformat(timespec='seconds')}",
        f"Q: {one_line(packet.get('requested_action', ''))}",
        f"Context: {one_line(packet.get('task_summary', ''))}",
        f"Attempted: {one_line(attempted)}",
        f"Choices: {' | '.join(one_line(option.label) for option in options)}",
    ]


def _evidence_lines(packet: Mapping[str, Any]) -> list[str]:
    return [
        f"- {entry.get('kind')}: {one_line(entry.get('ref', ''))}"
        for entry in packet.get("evidence", [])
        if isinstance(entry, Mapping)
    ]


def _advisory_lines(case: Case, route: RouteFacts, *, at: datetime) -> list[str]:
    """The dashboard advisory and the phone-sized prompt form (SPEC §4); a pipeline's caps."""
    advice = advisory(case)
    form = prompt_form(
        case, timeout_action=route.timeout_action, deadline=(case.routed_at or at) + route.timeout
    )
    more = f" (+{form.more} more below)" if form.more else ""
    lines = [
        "",
        f"Summary: {advice['summary']}",
        f"Recommended: {advice['recommended_action']}",
        "",
        f"On a phone: {form.question}",
        f"  Answers: {' | '.join(button.text for button in form.options)}{more}",
        f"  {form.default}",
    ]
    pipeline = case.pipeline
    if not pipeline:
        return lines
    lines.append(one_line(pipeline.get("note", ""), 300))
    unusable = [
        f"{name}: {reading.get('status')}"
        + (f" ({reading['error']})" if "error" in reading else "")
        for name, reading in (pipeline.get("files") or {}).items()
        if reading.get("status") == "malformed"
    ]
    if unusable:
        lines.append("Unreadable state files: " + one_line("; ".join(unusable), 400))
    return lines


def render_notification(
    case: Case, route: RouteFacts, *, public_url: str, at: datetime, copy_for: str | None = None
) -> Message:
    """The first notification; `copy_for` names the primary when this is a marked copy."""
    packet = case.packet
    lines = headline(case, case.options, at=at)
    if copy_for:
        lines += ["", f"COPY for your information: {copy_for} decides this case."]
    lines += [
        "",
        f"Severity: {route.severity} · trigger: {packet.get('trigger_type')}",
        f"Blocked on: {one_line(packet.get('blocked_on', ''), 400)}",
        f"Failure: {one_line(packet.get('trigger_detail', ''), 400)}",
    ]
    for key in ("phase", "component"):
        if isinstance(packet.get(key), str):
            lines.append(f"{key.capitalize()}: {one_line(packet[key])}")
    found = [line for line in case.pipeline.get("diagnostics") or [] if isinstance(line, str)]
    if found:  # what the pipeline's own state files said (SPEC §6), one line each
        lines += ["", "From the state files:", *(f"- {one_line(line, 300)}" for line in found)]
    lines += _advisory_lines(case, route, at=at)
    lines += ["", "Evidence:", *_evidence_lines(packet), "", "Options:"]
    lines += [
        f"- {option.label}"
        + (f" — {one_line(option.description, 120)}" if option.description else "")
        for option in case.options
    ]
    answer = case.options[0].label if case.options else "approve"
    lines += [
        "",
        "How to answer:",
        f"- reply on this channel starting with the code: {TOKEN_MARKER} {answer}",
        "- or open a link:",
        *(f"  {one_line(option.label)}: {link_marker(option.label)}" for option in case.options),
        f"- or the dashboard: {public_url}/dashboard/cases/{case.id}",
        f"- or: escalate reply {case.id} {answer}",
        f"- details: GET {public_url}/v1/escalations/{case.id} (operator token)",
        "",
        f"While waiting the run is {route.waiting_behavior}. If nobody decides within "
        f"{format_duration(route.timeout)}, {what_happens(route.timeout_action)}.",
        f"Case {case.id} · packet {case.packet_id} · design {route.design}",
    ]
    prefix = "[copy] " if copy_for else ""
    title = f"{prefix}[escalate] {route.severity}: {one_line(packet.get('blocked_on', ''), 100)}"
    return Message(title=title, body="\n".join(lines))


def render_follow_up(
    case: Case, route: RouteFacts, *, public_url: str, at: datetime, next_tier: bool = False
) -> Message:
    """The one follow-up: cites the packet id and says the window passed."""
    first = render_notification(case, route, public_url=public_url, at=at)
    note = (
        f"FOLLOW-UP on packet {case.packet_id}: the response window "
        f"({format_duration(route.window)}) passed with no decision."
    )
    if next_tier:
        note += " You are paged as the next tier."
    return Message(
        title=f"[escalate] follow-up {case.packet_id}: window passed",
        body=note + "\n\n" + first.body,
    )


def render_delivery_failure(case: Case, *, target: str, attempts: int, error: str) -> str:
    """trigger_detail of the second packet that escalates an undeliverable first one."""
    return one_line(
        f"Notification for packet {case.packet_id} (case {case.id}) to '{target}' was not "
        f"confirmed after {attempts} attempts; last error: {error}",
        600,
    )
