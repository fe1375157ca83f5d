"""What the operators' console shows, as pure rules: order, countdowns, badges, sentences."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from workflows.case import Option
from workflows.replies import ReplyMatch, clarification

SEVERITIES = ("critical", "high", "medium", "low")
SEVERITY_RANK = {name: rank for rank, name in enumerate(SEVERITIES)}
PAGE_SIZE = 50
_FAR = timedelta(days=36500)  # no deadline sorts after every deadline


def due_key(
    severity: str, deadline: datetime | None, created_at: datetime | None, *, now: datetime
) -> tuple[int, timedelta, datetime]:
    """What is due first: severity, then time left (none last), then the oldest."""
    left = deadline - now if deadline else _FAR
    return (SEVERITY_RANK.get(severity, len(SEVERITIES)), left, created_at or now)


def _span(delta: timedelta) -> str:
    """A duration as a person says it: 45 s, 18 min, 3 h 5 min, 2 d 4 h."""
    seconds = int(abs(delta.total_seconds()))
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def countdown(action: str | None, deadline: datetime | None, *, now: datetime) -> str | None:
    """'abort in 18 min', 'abort overdue by 2 min', or how a held case waits; None when closed."""
    if action is None:
        return None
    if action == "hold" or deadline is None:
        return "no default: waits for a person"
    left = deadline - now
    if left.total_seconds() < 0:
        return f"{action} overdue by {_span(left)}"
    return f"{action} in {_span(left)}"


@dataclass(frozen=True)
class Badge:
    """A short flag on a card: its kind (a CSS class) and its words."""

    kind: str
    text: str


def badges(
    *,
    state: str,
    deadline: datetime | None,
    acknowledged_by: str | None,
    decided_at: datetime | None,
    resumed_at: datetime | None,
    now: datetime,
) -> tuple[Badge, ...]:
    """Followed up, overdue, acknowledged by X, decided but not resumed."""
    found: list[Badge] = []
    if state == "followed_up":
        found.append(Badge("followed-up", "followed up"))
    if state in ("awaiting", "followed_up") and deadline is not None and deadline < now:
        found.append(Badge("overdue", "overdue"))
    if acknowledged_by:
        found.append(Badge("acknowledged", f"acknowledged by {acknowledged_by}"))
    if decided_at is not None and resumed_at is None:
        found.append(Badge("not-resumed", "decided, not resumed"))
    return tuple(found)


def severity_counts(severities: Iterable[str]) -> dict[str, int]:
    """Open cases per severity, every severity named (zero included), in rank order."""
    counts = dict.fromkeys(SEVERITIES, 0)
    for severity in severities:
        if severity in counts:
            counts[severity] += 1
    return counts


def page_title(open_count: int) -> str:
    """The browser tab: the open count first, so a glance at the tab says it."""
    return f"({open_count}) open — escalations" if open_count else "No open cases — escalations"


def safe_link(ref: object) -> str | None:
    """An evidence reference as a link when it is http(s) with a host, else None (text)."""
    if not isinstance(ref, str):
        return None
    try:
        parts = urlsplit(ref.strip())
    except ValueError:
        return None
    return ref.strip() if parts.scheme in ("http", "https") and parts.netloc else None


def _clock(at: datetime | None) -> str:
    return at.strftime("%H:%M") if at else "--:--"


def _when(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%d %H:%M UTC") if at else "earlier"


def closed_summary(
    *, option: str | None, decided_by: str | None, at: datetime | None, is_default: bool
) -> str | None:
    """'Decided: X by Y at T' or 'Default applied: abort — nobody answered'; None undecided."""
    if option is None:
        return None
    if is_default:
        return f"Default applied: {option} — nobody answered (at {_when(at)})"
    return f"Decided: {option} by {decided_by} at {_when(at)}"


def _minutes(seconds: object) -> str:
    if isinstance(seconds, int | float):
        return _span(timedelta(seconds=seconds))
    return "?"


def _said(kind: str, detail: Mapping[str, Any]) -> str:
    """One event's sentence, without its time."""
    if kind == "accepted":
        return "accepted" + (f", citing case {detail['cites']}" if detail.get("cites") else "")
    if kind == "validated":
        warnings = detail.get("warnings") or []
        return "checked" + (f" with {len(warnings)} warning(s)" if warnings else ": no warnings")
    if kind == "snapshot_recorded":
        return "recorded the last good state"
    if kind == "routed":
        copies = detail.get("copies") or []
        also = f" (copies: {', '.join(map(str, copies))})" if copies else ""
        return (
            f"routed to {detail.get('primary')}{also}; follow-up after "
            f"{_minutes(detail.get('window_seconds'))}, {detail.get('timeout_action')} after "
            f"{_minutes(detail.get('timeout_seconds'))}"
        )
    if kind == "delivery_attempt":
        verb = {
            "notify": "notified",
            "follow_up": "followed up with",
            "wake_task": "woke the run's task",
            "wake_webhook": "woke the run's webhook",
            "unblock": "wrote the decision file for",
            "command_file": "wrote the command file for",
        }.get(str(detail.get("purpose")), f"sent {detail.get('purpose')} to")
        sentence = f"{verb} {detail.get('channel')} — {detail.get('outcome')}"
        if detail.get("error"):
            sentence += f": {detail['error']}"
        if detail.get("gave_up"):
            sentence += " (gave up)"
        return sentence
    if kind == "delivery_cancelled":
        where = f"{detail.get('purpose')} to {detail.get('channel')}"
        return f"did not send {where}: {detail.get('why')}"
    if kind == "followed_up":
        recipients = ", ".join(map(str, detail.get("recipients") or [])) or "nobody"
        return f"followed up with {recipients}"
    if kind == "decided":
        return f"decided {detail.get('option')} by {detail.get('by')} via {detail.get('channel')}"
    if kind == "timeout_default":
        return (
            f"nobody answered in {_minutes(detail.get('after_seconds'))}: "
            f"the default {detail.get('action')} applied"
        )
    if kind == "held":
        paged = ", ".join(map(str, detail.get("paged") or [])) or "no one more"
        return f"held for a person (no default); paged {paged}"
    if kind == "closed":
        return f"closed: {detail.get('outcome')}" + (
            ", the run resumes" if detail.get("resumes") else ", the run stops"
        )
    if kind == "resumed":
        return f"the run resumed (via {detail.get('via')})"
    if kind == "wake_redelivered":
        return "woke the run again: no acknowledgement yet"
    if kind == "not_resumed":
        return "the run never acknowledged its wake-up"
    if kind == "dead_lettered":
        return f"parked: {detail.get('stuck_in')} failed {detail.get('attempts')} times"
    if kind == "retried":
        return f"sent back to {detail.get('into')} by {detail.get('by')}"
    if kind == "refused":
        errors = detail.get("errors") or []
        return f"refused: {len(errors)} problem(s) in the packet"
    if kind == "joined":
        return f"a repeat of this question joined it (packet {detail.get('packet_id')})"
    if kind in ("acknowledged", "snoozed", "reassigned", "commented"):
        words = {
            "acknowledged": "acknowledged",
            "snoozed": "deadline extended",
            "reassigned": "reassigned",
            "commented": "comment",
        }[kind]
        sentence = f"{words} by {detail.get('by')}"
        if detail.get("minutes"):
            sentence = f"{words} by {_minutes(60 * detail['minutes'])}, by {detail.get('by')}"
        if detail.get("to"):
            sentence += f" to {detail['to']}"
        return sentence + (f": {detail['reason']}" if detail.get("reason") else "")
    return kind.replace("_", " ")


def timeline_sentence(at: datetime | None, kind: str, detail: Mapping[str, Any]) -> str:
    """'07:12 notified oncall — sent': one event as a sentence a person reads on a phone."""
    return f"{_clock(at)} {_said(kind, detail)}"


def last_attempts(events: Sequence[tuple[datetime | None, str, Mapping[str, Any]]]) -> list[str]:
    """The last two delivery attempts as sentences, newest last."""
    tried = [(at, kind, detail) for at, kind, detail in events if kind == "delivery_attempt"]
    return [timeline_sentence(*event) for event in tried[-2:]]


def understood_words(
    match: ReplyMatch | None, answers: Sequence[Option], *, secrets: Sequence[str] = ()
) -> str:
    """What the reply grammar made of a free-text reply, said before anything is sent."""
    if secrets:
        return f"It holds a secret ({', '.join(secrets)}): it would not be recorded. Rephrase it."
    if match is None:
        return "That names no answer of this case."
    if match.decides:
        name = match.option.label if match.option else match.command
        return f"It decides: {name}."
    return "It would not decide anything. " + clarification(answers, match=match)
