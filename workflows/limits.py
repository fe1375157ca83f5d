"""What one request may carry: the caps on each field, and only text that can be stored.

A field over its cap, or holding a NUL or a lone surrogate (which PostgreSQL, UTF-8 and
every channel refuse), is refused with a line naming it, before any other check reads it:
the secret scan and the packet checks never see a megabyte, and no value that its column
cannot hold reaches the database (where it would fail as a 500 or park the case). The HTTP
body's cap is a setting (models/settings.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

ID_LIMIT = 200  # run_id, packet_id, recipient, owner: the columns are varchar(200)
LABEL_LIMIT = 200  # an option's label, enums, versions
SENTENCE_LIMIT = 1000  # blocked_on, requested_action, resume_condition: one sentence each
SUMMARY_LIMIT = 2000  # task_summary, one list entry, one evidence ref, a snapshot's text
DETAIL_LIMIT = 8000  # trigger_detail: error text and figures; also any other string
REPLY_LIMIT = 4000  # a reply's text
SENDER_LIMIT = 120  # a name or platform id beside the channel: replies.sender is varchar(200)
CHANNEL_LIMIT = 32  # a bridge's channel name, stored as "bridge:<name>" in varchar(40)
PATH_LIMIT = 4096  # a folder or file on the service's disk
URL_LIMIT = 2000  # a fingerprint URL
WEBHOOK_LIMIT = 500  # a webhook is a delivery's target: deliveries.target is varchar(500)
ENTRIES_LIMIT = 50  # entries in any one list
IDS_LIMIT = 100  # escalations one task waits on
DEPTH_LIMIT = 16  # objects and lists inside one another (a fingerprint sits at depth 3)

# The request's own fields, by path with list positions written as []; every other string
# anywhere in it is held to DETAIL_LIMIT.
TEXT_LIMITS: Mapping[str, int] = {
    "packet.packet_id": ID_LIMIT,
    "packet.run_id": ID_LIMIT,
    "packet.recipient": ID_LIMIT,
    "packet.severity": LABEL_LIMIT,
    "packet.trigger_type": LABEL_LIMIT,
    "packet.waiting_behavior": LABEL_LIMIT,
    "packet.task_summary": SUMMARY_LIMIT,
    "packet.blocked_on": SENTENCE_LIMIT,
    "packet.requested_action": SENTENCE_LIMIT,
    "packet.resume_condition": SENTENCE_LIMIT,
    "packet.trigger_detail": DETAIL_LIMIT,
    "packet.attempted[]": SUMMARY_LIMIT,
    "packet.completed[]": SUMMARY_LIMIT,
    "packet.remaining[]": SUMMARY_LIMIT,
    "packet.evidence[].kind": LABEL_LIMIT,
    "packet.evidence[].ref": SUMMARY_LIMIT,
    "owner": ID_LIMIT,
    "options[]": LABEL_LIMIT,
    "options[].label": LABEL_LIMIT,
    "options[].value": LABEL_LIMIT,
    "options[].description": SENTENCE_LIMIT,
    "snapshot.verified": SUMMARY_LIMIT,
    "snapshot.proof": SUMMARY_LIMIT,
    "snapshot.checked_at": LABEL_LIMIT,
    "snapshot.scheduled_task_ids[]": ID_LIMIT,
    "snapshot.fingerprint.path": PATH_LIMIT,
    "snapshot.fingerprint.url": URL_LIMIT,
    "wake.task": ID_LIMIT,
    "wake.webhook": WEBHOOK_LIMIT,
    "wake.fallback_file": PATH_LIMIT,
    "wake.blocked_file": PATH_LIMIT,
    "wake.command_file": PATH_LIMIT,
    "wake.decision_file": PATH_LIMIT,
    "wake.request_file": PATH_LIMIT,
}
_POSITION = re.compile(r"\[\d+\]")
# NUL (PostgreSQL text refuses it) and UTF-16 halves (no UTF-8 encoder takes them alone).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def unstorable(text: str) -> str | None:
    """What in `text` no column, log or channel can carry, or None when it is all storable."""
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    return "a NUL character" if found.group() == "\x00" else "a lone UTF-16 surrogate"


def refusals(request: object) -> list[str]:
    """Every line the request is refused for before it is read: caps and unstorable text."""
    return oversized(request) or unstorable_fields(request)


def unstorable_fields(request: object) -> list[str]:
    """One line per string (or key) holding text that cannot be stored, named by its path."""
    found: list[str] = []
    pending: list[tuple[str, object]] = [("", request)]
    while pending:
        path, value = pending.pop()
        if isinstance(value, str):
            if why := unstorable(value):
                found.append(f"{path or 'request'}: contains {why}")
        elif isinstance(value, Mapping):
            for key, item in value.items():
                name = str(key)
                if why := unstorable(name):
                    found.append(f"{path or 'request'}: a key contains {why}")
                else:
                    pending.append((f"{path}.{name}" if path else name, item))
        elif isinstance(value, list):
            pending.extend((f"{path}[{n}]", item) for n, item in enumerate(value))
    return sorted(found)


def oversized(request: object) -> list[str]:
    """One line per string over its cap, per list over ENTRIES_LIMIT and per value nested
    deeper than DEPTH_LIMIT, each named by its path (e.g. `packet.attempted[3]`)."""
    found: list[str] = []
    pending: list[tuple[str, object, int]] = [("", request, 0)]
    while pending:  # a loop, not recursion: the body may nest as deep as JSON parses
        path, value, depth = pending.pop()
        if isinstance(value, str):
            limit = TEXT_LIMITS.get(_POSITION.sub("[]", path), DETAIL_LIMIT)
            if len(value) > limit:
                found.append(f"{path}: at most {limit} characters, not {len(value)}")
        elif isinstance(value, Mapping | list) and depth >= DEPTH_LIMIT:
            found.append(f"{path}: nested deeper than {DEPTH_LIMIT} levels")
        elif isinstance(value, Mapping):
            for key, item in value.items():
                name = str(key)
                if len(name) > LABEL_LIMIT:
                    found.append(f"{path or 'request'}: a key of {len(name)} characters")
                else:
                    pending.append((f"{path}.{name}" if path else name, item, depth + 1))
        elif isinstance(value, list):
            if len(value) > ENTRIES_LIMIT:
                found.append(f"{path}: at most {ENTRIES_LIMIT} entries, not {len(value)}")
            for position, item in enumerate(value[:ENTRIES_LIMIT]):
                pending.append((f"{path}[{position}]", item, depth + 1))
    return sorted(found)


# What a reply row stores beside its text, by the name the refusal gives it: the columns'
# widths (replies.sender and platform_message_id varchar(200), channel varchar(40)).
REPLY_COLUMNS: Mapping[str, int] = {"sender": ID_LIMIT, "message_id": ID_LIMIT, "channel": 40}


def reply_refusals(fields: Mapping[str, str | None]) -> list[str]:
    """Why a reply cannot be stored: a field over its column, or text no column can hold."""
    found = []
    for name, value in fields.items():
        if value is None:
            continue
        limit = REPLY_COLUMNS.get(name)
        if limit is not None and len(value) > limit:
            found.append(f"{name}: at most {limit} characters, not {len(value)}")
        elif why := unstorable(value):
            found.append(f"{name}: contains {why}")
    return found
