"""The short notice every paged channel gets when its case ends: who, what, when, and that
nothing more is needed, so no copy keeps looking open."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from workflows.case import Case
from workflows.mail import Block, as_html, as_text
from workflows.payloads import Form, PageForms
from workflows.stage_results import Outbound, Purpose, Reading, Resolution, Role, Via
from workflows.text import one_line

NOTICE_TYPE = {
    Resolution.DECIDED: "success",
    Resolution.DEFAULTED: "info",
    Resolution.RECONCILE_FIRST: "warning",
    Resolution.CANCELLED: "info",
}


def _what(close: Mapping[str, Any], at: str) -> tuple[str, str]:
    """(headline word, the line saying who chose what, when)."""
    outcome = Resolution(close["outcome"])
    if outcome is Resolution.CANCELLED:
        return "Cancelled", f"The case was withdrawn at {at}; nobody needs to decide."
    if close.get("is_default"):
        return (
            "Defaulted",
            f"Nobody answered in time: the default {close['option']} applied at {at}.",
        )
    who = one_line(close.get("decided_by") or "someone", 80)
    return "Decided", f"Decided: {close['option']} by {who} at {at}."


def resolution_blocks(case: Case, close: Mapping[str, Any], *, now: datetime) -> list[Block]:
    at = now.isoformat(timespec="seconds")
    _, line = _what(close, at)
    lines = [
        line,
        f"Q: {one_line(case.packet.get('requested_action', ''), 160)}",
    ]
    if close.get("outcome") == Resolution.RECONCILE_FIRST:
        lines.append(one_line(str(close.get("recheck", "")), 200))
    lines.append(f"Nothing more is needed. Case {case.id} · run {one_line(case.run_id, 80)}")
    return [Block(tuple(lines))]


def resolution_notices(
    case: Case, close: Mapping[str, Any], tags: Iterable[str], *, now: datetime
) -> list[Outbound]:
    """One notice per tag that was paged for the case, in every form."""
    word, _ = _what(close, now.isoformat(timespec="seconds"))
    title = f"[escalate] {word}: {one_line(close['option'], 60)} · {one_line(case.run_id, 60)}"
    blocks = resolution_blocks(case, close, now=now)
    text, html = as_text(blocks), as_html(title, blocks)
    kind = NOTICE_TYPE.get(Resolution(close["outcome"]), "info")
    forms = {
        reading.value: Form(
            title=title, body=text, html=html if reading is Reading.MAIL else "", notify_type=kind
        )
        for reading in Reading
    }
    return [
        Outbound(
            Purpose.RESOLUTION, Via.APPRISE, tag, Role.COPY, title, text, PageForms(forms=forms)
        )
        for tag in sorted(set(tags))
    ]
