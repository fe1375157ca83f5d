"""The closed vocabularies of the packet and the design record (SPEC §1, §2)."""

from __future__ import annotations

from enum import StrEnum


class Severity(StrEnum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"


class TriggerType(StrEnum):
    BLOCKED = "blocked"
    UNCERTAIN = "uncertain"
    HARM_RISK = "harm_risk"
    COST_RISK = "cost_risk"
    PERMISSION_DENIED = "permission_denied"
    CONFLICTING_INSTRUCTIONS = "conflicting_instructions"
    MISSING_INPUT = "missing_input"
    TOOL_FAILURE = "tool_failure"


class WaitingBehavior(StrEnum):
    PAUSED = "paused"
    READ_ONLY = "read_only"
    SAFE_SUBSET = "safe_subset"
    STOPPED = "stopped"


class EvidenceKind(StrEnum):
    LINK = "link"
    ARTIFACT = "artifact"
    TEST = "test"
    LOG = "log"


class TimeoutAction(StrEnum):
    SKIP = "skip"
    QUEUE = "queue"
    RETRY = "retry"
    ABORT = "abort"
    HOLD = "hold"  # apply nothing: page up the tiers and wait for a person


# A critical case must not keep working while it waits (SPEC §1, §9).
CRITICAL_WAITING = frozenset({WaitingBehavior.PAUSED, WaitingBehavior.STOPPED})

REQUIRED_STRINGS = (
    "packet_id",
    "run_id",
    "task_summary",
    "trigger_detail",
    "blocked_on",
    "requested_action",
    "recipient",
    "resume_condition",
)
