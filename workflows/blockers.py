"""Blockers (SPEC §8): a run's task has one set of open blockers and wakes once, at the last.

Adding blockers extends the task's open set. When every blocker in it is resolved the set is
woken, once, and closed; a blocker added after that starts the task's next set. A blocker
whose decision already woke the task is not added again: the task has it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workflows.text import one_line

# kandev's name for this wake-up (its KANDEV_WAKE_REASON), which our payload keeps.
WAKE_REASON = "task_blockers_resolved"

# A blocker is resolved once its case is closed: decided (by a person or the default) and
# rechecked. A refused or parked case never resolves: it needs a person, not a wake-up.
RESOLVED = frozenset({"closed"})


@dataclass(frozen=True)
class Blocker:
    """One escalation a task waits on, as the task's card shows it."""

    escalation_id: str
    question: str
    state: str
    close: Mapping[str, Any] | None = None  # the case's close record (workflows/closing.py)
    outcome: str | None = None

    @property
    def title(self) -> str:
        return f"Decision needed: {one_line(self.question, 160)}"

    @property
    def resolved(self) -> bool:
        return self.state in RESOLVED

    def card(self) -> dict[str, Any]:
        return {
            "escalation_id": self.escalation_id,
            "title": self.title,
            "state": self.state,
            "resolved": self.resolved,
            "decision": dict(self.close or {}) or None,
            "outcome": self.outcome,
        }


@dataclass(frozen=True)
class SetChange:
    """What adding blockers does to a task's open set."""

    blockers: tuple[str, ...]  # the open set afterwards, in the order blockers were added
    added: tuple[str, ...]  # new to the set
    already_woken: tuple[str, ...]  # their decisions already woke the task: not added again

    @property
    def changed(self) -> bool:
        return bool(self.added)


def wake_purpose(wait_id: int) -> str:
    """The outbox purpose of a task set's wake-up (one row per way the task is woken)."""
    return f"task_wake:{wait_id}"


def blocker_set_key(escalation_ids: Sequence[str]) -> str:
    """The set's version: it changes whenever a blocker joins, so a wake-up claimed for an
    older version of the set claims nothing."""
    return hashlib.sha256("\x1f".join(sorted(set(escalation_ids))).encode()).hexdigest()


def extend_set(
    open_set: Sequence[str], requested: Sequence[str], *, woken: Collection[str]
) -> SetChange:
    """Add `requested` to the task's open set (empty when it has none); `woken` are the
    blockers earlier wake-ups of this task carried."""
    blockers = list(open_set)
    already = tuple(dict.fromkeys(i for i in requested if i in woken and i not in blockers))
    added = tuple(dict.fromkeys(i for i in requested if i not in blockers and i not in woken))
    return SetChange(tuple(blockers) + added, added, already)


def ready_to_wake(blockers: Sequence[Blocker]) -> bool:
    """The last open blocker is resolved."""
    return bool(blockers) and all(blocker.resolved for blocker in blockers)


def wake_payload(task: str, blockers: Sequence[Blocker]) -> dict[str, Any]:
    """What the woken run learns, in kandev's words: the reason, the task, and every resolved
    blocker's title and decision (its close record: outcome, option, decided_by, ...)."""
    return {
        "reason": WAKE_REASON,
        "task_id": task,
        "resolved_blocker_ids": [b.escalation_id for b in blockers],
        "blockers": [
            {
                "escalation_id": b.escalation_id,
                "title": b.title,
                "outcome": b.outcome,
                "decision": dict(b.close or {}),
            }
            for b in blockers
        ],
    }
