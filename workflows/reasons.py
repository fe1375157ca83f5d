"""What operators said while handling a case, returned to the run with its decision.

An acknowledgement ("I have it"), a deadline extension and a reassignment each carry who,
when and why; the run reads them in one field, `reasons`, wherever it reads the decision
(README, what the run sees), so it learns why it waited longer or who took over.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from workflows.text import one_line

# The timeline's event kind, and what the run is told was done.
WHAT_OF_EVENT = {"acknowledged": "acknowledged", "snoozed": "extended", "reassigned": "reassigned"}
EVENT_KINDS = tuple(WHAT_OF_EVENT)
_EXTRA = {"extended": ("minutes",), "reassigned": ("from", "to")}


def reasons_of(
    events: Iterable[tuple[datetime | None, str, Mapping[str, Any]]],
) -> list[dict[str, Any]]:
    """Each handling event, oldest first, as {what, who, when, why} (+ minutes, or from/to)."""
    found: list[dict[str, Any]] = []
    for at, kind, detail in events:
        what = WHAT_OF_EVENT.get(kind)
        if what is None:
            continue
        entry = {
            "what": what,
            "who": detail.get("by"),
            "when": at.isoformat() if at else None,
            "why": detail.get("reason"),
        }
        found.append(entry | {key: detail.get(key) for key in _EXTRA.get(what, ())})
    return found


def reason_line(entry: Mapping[str, Any]) -> str:
    """One reason as a line a person or an agent reads: 'extended by 30 min by ana at T: why'."""
    what = str(entry.get("what", ""))
    if what == "extended" and entry.get("minutes"):
        what = f"extended by {entry['minutes']} min"
    if what == "reassigned" and entry.get("to"):
        what = f"reassigned from {entry.get('from')} to {entry['to']}"
    said = f"{what} by {entry.get('who')} at {entry.get('when')}: {entry.get('why')}"
    return one_line(said, 500)
