"""The stages that are not routing or closing: the snapshot, a decision, a dead-letter retry.

Routing, follow-up and timeout live in routing.py, the close in closing.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from workflows.case import Case, Option
from workflows.stage_results import CaseUpdate, DecisionSpec, EventSpec, Stage, StageResult
from workflows.states import RETRYABLE, State, TransitionRefused, check_transition


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
        updates=CaseUpdate(snapshot=snapshot),
        next_stage=Stage.ROUTE,
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
        updates=CaseUpdate(decided_at=now),
        decision=decision,
        next_stage=Stage.CLOSE,
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
