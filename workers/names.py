"""Task names are a public API: agents call `escalation.escalate` by name with send_task."""

from __future__ import annotations

from workflows.stage_results import Stage

ESCALATE = "escalation.escalate"
SNAPSHOT = "escalation.stage.snapshot"
ROUTE = "escalation.stage.route"
DELIVER = "escalation.deliver"
FOLLOW_UP = "escalation.stage.follow_up"
TIMEOUT = "escalation.stage.timeout"
CLOSE = "escalation.stage.close"
SWEEP = "escalation.sweep"
ACK_WAKE = "escalation.ack_wake"  # a woken run says it resumed: (wake_id, token)

# The pure stage names the workflow speaks, mapped to the tasks that run them.
FOR_STAGE = {
    Stage.SNAPSHOT: SNAPSHOT,
    Stage.ROUTE: ROUTE,
    Stage.DELIVER: DELIVER,
    Stage.FOLLOW_UP: FOLLOW_UP,
    Stage.TIMEOUT: TIMEOUT,
    Stage.CLOSE: CLOSE,
}
