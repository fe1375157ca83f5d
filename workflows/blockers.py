"""Blockers (SPEC §8): a run's task waits on several escalations and wakes once, at the last."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workflows.text import one_line

# A blocker is resolved once its case is closed: decided (by a person or the default) and
# rechecked. A refused or parked case never resolves: it needs a person, not a wake-up.
RESOLVED = frozenset({"closed"})


@dataclass(frozen=True)
class Blocker:
    """One escalation a task waits on, as the task's card shows it."""

    escalation_id: str
    question: str
    state: str
    decision: Mapping[str, Any] | None = None
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
            "decision": dict(self.decision or {}) or None,
            "outcome": self.outcome,
        }


def blocker_set_key(escalation_ids: Sequence[str]) -> str:
    """One key per set of blockers: the wake-up fires once for that set."""
    return hashlib.sha256("\x1f".join(sorted(set(escalation_ids))).encode()).hexdigest()


def ready_to_wake(blockers: Sequence[Blocker]) -> bool:
    """The last open blocker is resolved."""
    return bool(blockers) and all(blocker.resolved for blocker in blockers)


def wake_payload(task: str, blockers: Sequence[Blocker]) -> dict[str, Any]:
    """What the woken run learns: every resolved blocker's title and decision."""
    return {
        "task": task,
        "reason": "blockers_resolved",
        "blockers": [
            {
                "escalation_id": b.escalation_id,
                "title": b.title,
                "decision": dict(b.decision or {}),
                "outcome": b.outcome,
            }
            for b in blockers
        ],
    }
