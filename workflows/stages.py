"""The six stages (SPEC §3) as pure functions: state, design and `now` in, a decision out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from models.design import SEVERITY_ORDER
from workflows.blocked_file import decision_log_line, render_decision, unblock_paths
from workflows.case import Case, Option
from workflows.notifications import (
    render_delivery_failure,
)
from workflows.pipeline import command_record
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


@dataclass(frozen=True)
class Recheck:
    """The resume-state recheck: did the world change under the case?"""

    changed: bool | None  # None when there is nothing to compare
    message: str


def recheck(snapshot: Mapping[str, Any], current: str | None, probe_error: str | None) -> Recheck:
    """Compare the snapshot's fingerprint with the one read now."""
    fingerprint = snapshot.get("fingerprint") or {}
    kind, before = fingerprint.get("kind", "none"), fingerprint.get("value")
    where = fingerprint.get("path") or fingerprint.get("url") or ""
    if kind == "none":
        return Recheck(None, "no fingerprint was recorded; nothing to recheck")
    if snapshot.get("probe_error"):
        return Recheck(
            True,
            f"reconcile first: the snapshot could not read {kind} {where}: "
            f"{snapshot['probe_error']}",
        )
    if probe_error:
        return Recheck(True, f"reconcile first: could not re-read {kind} {where}: {probe_error}")
    if before == current:
        return Recheck(False, f"unchanged: {kind} {where} still {current}")
    return Recheck(True, f"reconcile first: {kind} {where} changed from {before} to {current}")


def close_case(
    case: Case,
    decision: DecisionSpec,
    *,
    current: str | None,
    probe_error: str | None,
    now: datetime,
) -> StageResult:
    """Stage 6: recheck the state, write the close entry and queue the wake-ups."""
    checked = recheck(case.snapshot, current, probe_error)
    if not decision.resumes:
        outcome = "stop"
    elif checked.changed:
        outcome = "reconcile_first"
    else:
        outcome = "resume"
    remaining = list(case.packet.get("remaining", []))
    close = {
        "option": decision.option,
        "value": decision.value,
        "decided_by": decision.decided_by,
        "channel": decision.channel,
        "is_default": decision.is_default,
        "outcome": outcome,
        "recheck": checked.message,
        "resume_at": now.isoformat() if outcome != "stop" else None,
        # The decision clears this one point only; on stop the remaining work is dropped.
        "clears": case.packet.get("blocked_on"),
        "work_discarded": remaining if outcome == "stop" else [],
    }
    payload = {
        "escalation_id": case.id,
        "run_id": case.run_id,
        "packet_id": case.packet_id,
        **close,
    }
    outbound = []
    if isinstance(case.wake.get("task"), str):
        outbound.append(Outbound("wake_task", "celery", case.wake["task"], payload=payload))
    if isinstance(case.wake.get("webhook"), str):
        outbound.append(Outbound("wake_webhook", "webhook", case.wake["webhook"], payload=payload))
    if isinstance(case.wake.get("blocked_file"), str):  # a shell loop's BLOCKED.md (§5)
        blocked = case.wake["blocked_file"]
        decision_file, decisions_log = unblock_paths(blocked)
        at = now.isoformat()
        decision_md = render_decision(
            close,
            escalation_id=case.id,
            run_id=case.run_id,
            packet_id=case.packet_id,
            question=str(case.packet.get("requested_action", "")),
            closed_at=at,
        )
        unblock = {
            "escalation_id": case.id,
            "blocked_file": blocked,
            "decision_file": decision_file,
            "decisions_log": decisions_log,
            "decision_md": decision_md,
            "log_line": decision_log_line(close, escalation_id=case.id, closed_at=at),
        }
        outbound.append(Outbound("unblock", "file", blocked, payload=unblock))
    if isinstance(case.wake.get("command_file"), str):  # a pipeline's orchestrator (§6)
        record = command_record(case.id, case.pipeline, close, closed_at=now.isoformat())
        outbound.append(Outbound("command_file", "file", case.wake["command_file"], payload=record))
    return StageResult(
        state=check_transition(case.state, State.CLOSED),
        events=(EventSpec("closed", close),),
        outbound=tuple(outbound),
        updates={"closed_at": now, "outcome": outcome},
        next_stage=DELIVER if outbound else None,
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
