"""The six stages (SPEC §3) as pure functions: state, design and `now` in, a decision out."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from workflows.case import Case, Option
from workflows.closing import Recheck, close_case, recheck
from workflows.delivery_failure import delivery_failure_packet
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
from workflows.states import RETRYABLE, State, TransitionRefused, check_transition

# The values live in stage_results, routing in routing, closing in closing and the
# delivery-failure packet in delivery_failure; callers keep importing every stage name here.
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
    "retry_dead_letter",
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


def retry_dead_letter(case: Case, stuck_in: State, *, by: str, now: datetime) -> StageResult:
    """A person sends a dead-lettered case back to the stage it failed in, attempts reset."""
    if case.state is not State.DEAD_LETTER:
        raise TransitionRefused(f"only a dead_letter case can be retried; this one is {case.state}")
    if stuck_in not in RETRYABLE:
        raise TransitionRefused(f"a case stuck in {stuck_in} cannot be retried")
    return StageResult(
        state=stuck_in,
        events=(EventSpec("retried", {"into": stuck_in.value, "by": by}),),
        next_action_at=now,  # due at once: a waiting case's deadline had passed already
    )
