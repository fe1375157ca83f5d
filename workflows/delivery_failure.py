"""An undeliverable notice escalates itself: the second packet, one severity higher."""

from __future__ import annotations

from typing import Any

from workflows.case import Case
from workflows.design import SEVERITY_ORDER
from workflows.notifications import render_delivery_failure
from workflows.vocabulary import CRITICAL_WAITING, Severity, WaitingBehavior


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
