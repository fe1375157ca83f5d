"""What the operator reads (SPEC §4): every message stands alone, secrets never appear.

Each channel gets the form it is read in (workflows/channel_kinds.py): chat and push a short
phone-first message (the headline, one answer line with the code, one link to the case),
mail a subject saying what is needed and the full text, with an HTML twin. Every fact once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from workflows.advisory import advisory, what_happens
from workflows.case import Case, Option
from workflows.channel_kinds import notify_type_for
from workflows.durations import format_duration
from workflows.mail import Block, Item, as_html, as_text
from workflows.payloads import Form
from workflows.stage_results import Reading
from workflows.text import one_line

SHORT_LIMIT = 1000  # characters a phone-first message keeps to, whatever the options


@dataclass(frozen=True)
class Message:
    """A rendered notification: apprise's title, body, HTML twin (mail) and notify type."""

    title: str
    body: str
    html: str = ""
    notify_type: str = "info"


@dataclass(frozen=True)
class RouteFacts:
    """The routing facts a message states: severity, windows, default, design."""

    severity: str
    window: timedelta
    timeout: timedelta
    timeout_action: str
    waiting_behavior: str
    design: str
    # When the tier's clock started: the first page's time, later than routing when it
    # waited for working hours.
    clock_from: datetime | None = None


# Filled in at send time (workers/answering.py): the outbox never holds a live token or link.
TOKEN_MARKER = "{{reply_token}}"


def link_marker(label: str) -> str:
    return "{{link:" + label + "}}"


# A delivery-failure case's notice carries the original case's code and links (filled at send).
CITED_TOKEN_MARKER = "{{cited_token}}"


def cited_link_marker(label: str) -> str:
    return "{{cited_link:" + label + "}}"


def fill_cited_markers(text: str, *, token: str, links: Mapping[str, str]) -> str:
    """Put the original case's reply code and answer links into a delivery-failure notice."""
    text = text.replace(CITED_TOKEN_MARKER, token)
    for label, url in links.items():
        text = text.replace(cited_link_marker(label), url)
    return text


def _original(case: Case) -> Mapping[str, Any] | None:
    original = case.packet.get("original")
    return original if case.cites_id and isinstance(original, Mapping) else None


def _original_lines(case: Case, reading: Reading, public_url: str) -> list[str]:
    """What a short delivery-failure notice repeats of the original case."""
    original = _original(case)
    if original is None:
        return []
    labels = [str(o.get("label")) for o in original.get("options") or [] if isinstance(o, Mapping)]
    lines = [
        f"Original question (case {case.cites_id}): {one_line(str(original.get('question')), 200)}",
        f"Its choices: {one_line(' | '.join(labels), 200)}",
    ]
    failing = [str(c).split(" #")[0] for c in case.packet.get("failing_channels") or []]
    if failing:
        lines.append(f"Failing: {one_line(', '.join(failing), 300)}")
    if reading is Reading.CHAT:
        lines.append(f"Answer it here: {CITED_TOKEN_MARKER} <choice>")
    else:
        lines.append(
            f"Answer it: {public_url}/dashboard/cases/{case.cites_id} (code {CITED_TOKEN_MARKER})"
        )
    return lines


def _original_blocks(case: Case, public_url: str) -> list[Block]:
    """What a mailed delivery-failure notice repeats: the question, options and links."""
    original = _original(case)
    if original is None:
        return []
    options = tuple(
        Item(
            one_line(str(o.get("label")))
            + (f" — {one_line(str(o['description']), 160)}" if o.get("description") else ""),
            cited_link_marker(str(o.get("label"))),
        )
        for o in original.get("options") or []
        if isinstance(o, Mapping)
    )
    failing = tuple(Item(one_line(str(c), 300)) for c in case.packet.get("failing_channels") or [])
    return [
        *([Block(heading="Failing channels:", items=failing)] if failing else []),
        Block(
            (
                f"The original question (case {case.cites_id}), answer it directly: "
                f"{one_line(str(original.get('question')), 600)}",
            )
        ),
        Block(heading="Its options (each link answers the original case):", items=options),
        Block(
            (
                f"Or reply on a chat channel with its code: {CITED_TOKEN_MARKER} <option>, or "
                f"open {public_url}/dashboard/cases/{case.cites_id}",
            )
        ),
    ]


def fill_markers(text: str, *, token: str, links: Mapping[str, str]) -> str:
    """Put the case's reply token and this channel's answer links into a rendered message."""
    text = text.replace(TOKEN_MARKER, token)
    for label, url in links.items():
        text = text.replace(link_marker(label), url)
    return text


def blocked_at(case: Case, at: datetime) -> datetime:
    """When the run blocked (its case was raised): a follow-up says that, not when it is sent."""
    return case.created_at or case.routed_at or at


def headline(case: Case, options: Sequence[Option], *, at: datetime) -> list[str]:
    """The five headline lines, in order."""
    packet = case.packet
    attempted = "; ".join(str(step) for step in packet.get("attempted", []))
    return [
        f"[escalate] blocked in {one_line(case.run_id, 80)} on {at.isoformat(timespec='seconds')}",
        f"Q: {one_line(packet.get('requested_action', ''))}",
        f"Context: {one_line(packet.get('task_summary', ''))}",
        f"Attempted: {one_line(attempted)}",
        f"Choices: {one_line(' | '.join(one_line(o.label) for o in options), 200)}",
    ]


@dataclass(frozen=True)
class _Note:
    """Why this copy of the message is sent: a marked copy, or the follow-up."""

    copy_for: str | None = None
    follow_up: str = ""


def _deadline(case: Case, route: RouteFacts, at: datetime) -> str:
    deadline = (route.clock_from or case.routed_at or at) + route.timeout
    return deadline.isoformat(timespec="minutes")


CHAT_ANSWER = "Answer: reply here with the code, then your choice"
CHAT_BUTTONS_ANSWER = "Answer: tap a button, or reply here with the code, then your choice"


def _answer_line(reading: Reading) -> str:
    if reading is Reading.CHAT:
        return f"{CHAT_ANSWER}: {TOKEN_MARKER} <choice>"
    if reading is Reading.BUTTONS:
        return f"Answer: tap a button, or open the case below (code {TOKEN_MARKER})"
    return f"Answer: open the case below (code {TOKEN_MARKER})"


def _fit(lines: list[str], limit: int) -> list[str]:
    """Cut the headline's free-text lines (Context, Attempted, Q, Choices) until it fits."""
    for index in (2, 3, 1, 4):
        over = len("\n".join(lines)) - limit
        if over <= 0:
            break
        prefix, _, text = lines[index].partition(": ")
        lines[index] = f"{prefix}: {one_line(text, max(len(text) - over, 20))}"
    return lines


def _short(
    case: Case, route: RouteFacts, note: _Note, *, public_url: str, at: datetime, reading: Reading
) -> Message:
    lines = headline(case, case.options, at=blocked_at(case, at))
    lines += _original_lines(case, reading, public_url)
    if note.copy_for:
        lines.append(f"COPY: {one_line(note.copy_for, 60)} decides this case.")
    if note.follow_up:
        lines.append(note.follow_up)
    lines += [
        f"If nobody answers by {_deadline(case, route, at)}, {what_happens(route.timeout_action)}.",
        _answer_line(reading),
        f"Case: {public_url}/dashboard/cases/{case.id}",
    ]
    kind = "follow-up " + case.packet_id + ": " if note.follow_up else ""
    prefix = "[copy] " if note.copy_for else ""
    title = f"{prefix}[escalate] {kind}Decision needed ({route.severity}) · {TOKEN_MARKER}"
    return Message(
        title=title,
        body="\n".join(_fit(lines, SHORT_LIMIT)),
        notify_type=notify_type_for(route.severity),
    )


def _pipeline_lines(case: Case) -> list[str]:
    pipeline = case.pipeline
    if not pipeline:
        return []
    advice = advisory(case)
    lines = [
        one_line(pipeline.get("note", ""), 300),
        f"Summary: {advice['summary']}",
        f"Recommended: {advice['recommended_action']}",
    ]
    unusable = [
        f"{name}: {reading.get('status')}"
        + (f" ({reading['error']})" if "error" in reading else "")
        for name, reading in (pipeline.get("files") or {}).items()
        if reading.get("status") == "malformed"
    ]
    if unusable:
        lines.append("Unreadable state files: " + one_line("; ".join(unusable), 400))
    return lines


def _mail_blocks(
    case: Case, route: RouteFacts, note: _Note, *, public_url: str, at: datetime
) -> list[Block]:
    packet = case.packet
    opening = [
        f"Decision needed in {one_line(case.run_id)}, blocked since "
        f"{blocked_at(case, at).isoformat(timespec='seconds')}."
    ]
    if note.copy_for:
        opening.append(f"COPY for your information: {note.copy_for} decides this case.")
    if note.follow_up:
        opening.append(note.follow_up)
    attempted = "; ".join(str(step) for step in packet.get("attempted", []))
    facts = [
        f"Question: {one_line(packet.get('requested_action', ''), 600)}",
        f"Context: {one_line(packet.get('task_summary', ''), 600)}",
        f"Attempted: {one_line(attempted, 600)}",
        f"Blocked on: {one_line(packet.get('blocked_on', ''), 400)}",
        f"Failure: {one_line(packet.get('trigger_detail', ''), 400)}",
        f"Trigger: {packet.get('trigger_type')}",
    ]
    for key in ("phase", "component"):
        if isinstance(packet.get(key), str):
            facts.append(f"{key.capitalize()}: {one_line(packet[key])}")
    facts += _pipeline_lines(case)
    found = [line for line in case.pipeline.get("diagnostics") or [] if isinstance(line, str)]
    if found:  # what the pipeline's own state files said (SPEC §6), one line each
        facts += ["From the state files:", *(f"- {one_line(line, 300)}" for line in found)]
    evidence = tuple(
        Item(f"{entry.get('kind')}: {one_line(entry.get('ref', ''))}")
        for entry in packet.get("evidence", [])
        if isinstance(entry, Mapping)
    )
    options = tuple(
        Item(
            one_line(option.label)
            + (f" — {one_line(option.description, 160)}" if option.description else ""),
            link_marker(option.label),
        )
        for option in case.options
    )
    example = case.options[0].label if case.options else "approve"
    blocks = [Block(tuple(opening)), Block(tuple(facts))]
    blocks += _original_blocks(case, public_url)
    if evidence:
        blocks.append(Block(heading="Evidence:", items=evidence))
    blocks += [
        Block(heading="Options:", items=options),
        Block(
            (
                "How to answer: open an option's link above (it asks before it decides), "
                f"the case page {public_url}/dashboard/cases/{case.id}, "
                f"or run: escalate reply {case.id} {example}",
            )
        ),
        Block(
            (
                f"While waiting the run is {route.waiting_behavior}. If nobody decides by "
                f"{_deadline(case, route, at)} (within {format_duration(route.timeout)}), "
                f"{what_happens(route.timeout_action)}.",
                f"Case {case.id} · packet {case.packet_id} · design {route.design} · "
                f"code {TOKEN_MARKER}",
            )
        ),
    ]
    return blocks


def _mail(case: Case, route: RouteFacts, note: _Note, *, public_url: str, at: datetime) -> Message:
    question = one_line(case.packet.get("requested_action", ""), 100)
    kind = f"follow-up {case.packet_id}: " if note.follow_up else ""
    prefix = "[copy] " if note.copy_for else ""
    title = (
        f"{prefix}[escalate] {kind}Decision needed ({route.severity}): {question} · {TOKEN_MARKER}"
    )
    blocks = _mail_blocks(case, route, note, public_url=public_url, at=at)
    return Message(
        title=title,
        body=as_text(blocks),
        html=as_html(title, blocks),
        notify_type=notify_type_for(route.severity),
    )


def _render(
    case: Case, route: RouteFacts, note: _Note, *, public_url: str, at: datetime, reading: Reading
) -> Message:
    if reading is Reading.MAIL:
        return _mail(case, route, note, public_url=public_url, at=at)
    return _short(case, route, note, public_url=public_url, at=at, reading=reading)


def render_notification(
    case: Case,
    route: RouteFacts,
    *,
    public_url: str,
    at: datetime,
    copy_for: str | None = None,
    reading: Reading = Reading.MAIL,
) -> Message:
    """The first notification; `copy_for` names the primary when this is a marked copy."""
    return _render(
        case, route, _Note(copy_for=copy_for), public_url=public_url, at=at, reading=reading
    )


def render_follow_up(
    case: Case,
    route: RouteFacts,
    *,
    public_url: str,
    at: datetime,
    next_tier: bool = False,
    reading: Reading = Reading.MAIL,
) -> Message:
    """The one follow-up: cites the packet, says the window passed, still stands alone."""
    note = (
        f"FOLLOW-UP on packet {case.packet_id}: the response window "
        f"({format_duration(route.window)}) passed with no decision."
    )
    if next_tier:
        note += " You are paged as the next tier."
    return _render(
        case, route, _Note(follow_up=note), public_url=public_url, at=at, reading=reading
    )


def render_chain_page(
    case: Case,
    route: RouteFacts,
    *,
    public_url: str,
    at: datetime,
    note: str,
    reading: Reading = Reading.MAIL,
) -> Message:
    """A chain level's page: says where in the chain it is, and stands alone like the rest."""
    return _render(
        case, route, _Note(follow_up=note), public_url=public_url, at=at, reading=reading
    )


def every_form(render: Any, *args: Any, **kwargs: Any) -> dict[str, Form]:
    """The message in each form, keyed by Reading, as the outbox payload carries it."""
    forms = {}
    for reading in Reading:
        message = render(*args, reading=reading, **kwargs)
        forms[reading.value] = Form(
            title=message.title,
            body=message.body,
            html=message.html,
            notify_type=message.notify_type,
        )
    return forms


def render_delivery_failure(case: Case, *, target: str, attempts: int, error: str) -> str:
    """trigger_detail of the second packet that escalates an undeliverable first one."""
    return one_line(
        f"Notification for packet {case.packet_id} (case {case.id}) to '{target}' was not "
        f"confirmed after {attempts} attempts; last error: {error}",
        600,
    )
