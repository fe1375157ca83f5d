"""How much one request may carry: the caps on each field (the body's cap is a setting).

A field over its cap is refused with a line naming it, before any other check reads it:
the secret scan and the packet checks never see a megabyte, and no value longer than its
column reaches PostgreSQL (where it would fail as a 500).
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
URL_LIMIT = 2000  # a webhook, a task name, a fingerprint URL
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
    "wake.webhook": URL_LIMIT,
    "wake.fallback_file": PATH_LIMIT,
    "wake.blocked_file": PATH_LIMIT,
    "wake.command_file": PATH_LIMIT,
}
_POSITION = re.compile(r"\[\d+\]")


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
