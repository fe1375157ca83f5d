"""The six stages (SPEC §3) as pure functions: state, design and `now` in, a decision out."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from models.design import SEVERITY_ORDER
from workflows.case import Case, Option
from workflows.closing import Recheck, close_case, recheck
from workflows.notifications import (
    render_delivery_failure,
)
from workflows.routing import (
    PIPELINE_TIMEOUT_COMMAND,
    apply_timeout,
    follow_up,
    route_case,
    route_facts,
)
from workflows.stage_results import (
    CLOSE,
    DELIVER,
    FOLLOW_UP,
    ROUTE,
    SNAPSHOT,
    SYSTEM,
    TIMEOUT,
    DecisionSpec,
    EventSpec,
    Outbound,
    StageResult,
)
from workflows.states import State, check_transition
from workflows.vocabulary import CRITICAL_WAITING, Severity, WaitingBehavior

# Callers keep importing every stage name from here, wherever it is defined.
__all__ = [
    "CLOSE",
    "DELIVER",
    "FOLLOW_UP",
    "PIPELINE_TIMEOUT_COMMAND",
    "ROUTE",
    "SNAPSHOT",
    "SYSTEM",
    "TIMEOUT",
    "DecisionSpec",
    "EventSpec",
    "Outbound",
    "Recheck",
    "StageResult",
    "apply_timeout",
    "close_case",
    "decide",
    "delivery_failure_packet",
    "follow_up",
    "recheck",
    "record_snapshot",
    "route_case",
    "route_facts",
]


def record_snapshot(
    case: Case,
    *,
    fingerprint: str | None,
    probe_error: str | None,
    revoked: Sequence[str],
    now: datetime,
    revoke_error: str | None = None,
) -> StageResult:
    """Stage 1: persist the last verified good state and what was stopped."""
    spec = dict(case.snapshot)
    snapshot = {
        **spec,
        "fingerprint": {**dict(spec.get("fingerprint") or {"kind": "none"}), "value": fingerprint},
        "recorded_at": now.isoformat(),
        "revoked_task_ids": list(revoked),
    }
    if probe_error:
        snapshot["probe_error"] = probe_error
    if revoke_error:
        snapshot["revoke_error"] = revoke_error
    detail = {
        "verified": spec.get("verified"),
        "fingerprint_kind": snapshot["fingerprint"].get("kind", "none"),
        "fingerprint": fingerprint,
        "revoked_task_ids": list(revoked),
        **({"probe_error": probe_error} if probe_error else {}),
        **({"revoke_error": revoke_error} if revoke_error else {}),
    }
    return StageResult(
        state=check_transition(case.state, State.SNAPSHOTTED),
        events=(EventSpec("snapshot_recorded", detail),),
        updates={"snapshot": snapshot},
        next_stage=ROUTE,
    )


def decide(
    case: Case, option: Option, *, responder: str, channel: str, now: datetime
) -> StageResult:
    """A human's deciding reply: record it; the first one wins (the database enforces it)."""
    decision = DecisionSpec(
        option=option.label,
        value=option.value,
        resumes=option.resumes,
        decided_by=responder,
        channel=channel,
    )
    return StageResult(
        state=check_transition(case.state, State.DECIDED),
        events=(
            EventSpec("decided", {"option": option.label, "by": responder, "channel": channel}),
        ),
        updates={"decided_at": now},
        decision=decision,
        next_stage=CLOSE,
    )


def delivery_failure_packet(
    case: Case, *, target: str, attempts: int, error: str
) -> dict[str, Any] | None:
    """The second packet that escalates an undeliverable first one; None if it is one itself."""
    if case.cites_id is not None:
        return None  # a failed failure-notice is recorded, never escalated again
    packet = case.packet
    severity = Severity(str(packet["severity"]))
    higher = SEVERITY_ORDER[min(SEVERITY_ORDER.index(severity) + 1, len(SEVERITY_ORDER) - 1)]
    waiting = WaitingBehavior(str(packet["waiting_behavior"]))
    if higher is Severity.CRITICAL and waiting not in CRITICAL_WAITING:
        waiting = WaitingBehavior.PAUSED
    return {
        "packet_id": f"{case.packet_id}-undelivered",
        "run_id": case.run_id,
        "task_summary": f"Get escalation {case.packet_id} in front of its decider.",
        "severity": higher.value,
        "trigger_type": "tool_failure",
        "trigger_detail": render_delivery_failure(
            case, target=target, attempts=attempts, error=error
        ),
        "attempted": [f"Sent to '{target}' {attempts} times with exponential backoff."],
        "evidence": [{"kind": "log", "ref": f"escalation {case.id} events"}],
        "completed": [],
        "remaining": [f"Decide case {case.id}: {packet.get('requested_action')}"],
        "blocked_on": f"The notification for packet {case.packet_id} could not be delivered.",
        "requested_action": f"Answer case {case.id} yourself, or fix channel '{target}'.",
        "recipient": str(packet.get("recipient")),
        "waiting_behavior": waiting.value,
        "resume_condition": f"A decision recorded on case {case.id}.",
    }
