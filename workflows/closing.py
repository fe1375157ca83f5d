"""Closing a decided case (SPEC §3 stage 6): recheck the world, write the close, wake the run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from workflows.blocked_file import (
    decision_log_line,
    plan_path,
    render_decision,
    render_plan_entry,
    unblock_paths,
)
from workflows.case import Case
from workflows.intake import wake_queue
from workflows.pipeline import command_record
from workflows.resolution import resolution_notices
from workflows.stage_results import (
    CaseUpdate,
    DecisionSpec,
    EventSpec,
    Outbound,
    Purpose,
    Resolution,
    Stage,
    StageResult,
    Via,
)
from workflows.states import State, check_transition


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
    paged: Sequence[str] = (),
    reasons: Sequence[Mapping[str, Any]] = (),
) -> StageResult:
    """Stage 6: recheck the state, write the close entry, queue the wake-ups and a short
    resolution notice to every tag that was `paged` for the case. `reasons` are what the
    operators said while handling it (workflows/reasons.py): the run reads them too."""
    checked = recheck(case.snapshot, current, probe_error)
    if checked.changed and decision.resumes:
        outcome = Resolution.RECONCILE_FIRST  # acting on the answer needs a look first
    elif decision.is_default:
        outcome = Resolution.DEFAULTED
    else:
        outcome = Resolution.DECIDED
    remaining = list(case.packet.get("remaining", []))
    close = {
        "option": decision.option,
        "value": decision.value,
        # A default is nobody's decision: the run is never told a person chose it.
        "decided_by": None if decision.is_default else decision.decided_by,
        "channel": decision.channel,
        "is_default": decision.is_default,
        "default_action": decision.value if decision.is_default else None,
        "outcome": outcome,
        "resumes": decision.resumes,
        "recheck": checked.message,
        "resume_at": now.isoformat() if decision.resumes else None,
        # The decision clears this one point only; on stop the remaining work is dropped.
        "clears": case.packet.get("blocked_on"),
        "work_discarded": [] if decision.resumes else remaining,
        "reasons": [dict(reason) for reason in reasons],
    }
    outbound = _wake_ups(case, close, now=now) + resolution_notices(case, close, paged, now=now)
    return StageResult(
        state=check_transition(case.state, State.CLOSED),
        events=(EventSpec("closed", close),),
        outbound=tuple(outbound),
        updates=CaseUpdate(closed_at=now, outcome=outcome),
        next_stage=Stage.DELIVER if outbound else None,
    )


def _wake_ups(case: Case, close: Mapping[str, Any], *, now: datetime) -> list[Outbound]:
    """One outbox row per way the case's run asked to be woken, each carrying the close."""
    payload = {
        "escalation_id": case.id,
        "run_id": case.run_id,
        "packet_id": case.packet_id,
        **close,
    }
    outbound = []
    if isinstance(case.wake.get("task"), str):
        queue = wake_queue(case.wake)  # the run's own worker's, never the service's
        outbound.append(
            Outbound(Purpose.WAKE_TASK, Via.CELERY, case.wake["task"], payload=payload, queue=queue)
        )
    if isinstance(case.wake.get("webhook"), str):
        outbound.append(
            Outbound(Purpose.WAKE_WEBHOOK, Via.WEBHOOK, case.wake["webhook"], payload=payload)
        )
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
            "plan_file": plan_path(blocked),
            "plan_entry": render_plan_entry(
                close,
                escalation_id=case.id,
                question=str(case.packet.get("requested_action", "")),
                closed_at=at,
            ),
            **(
                {"named_file": case.wake["decision_file"]}
                if isinstance(case.wake.get("decision_file"), str)
                else {}
            ),
        }
        outbound.append(Outbound(Purpose.UNBLOCK, Via.FILE, blocked, payload=unblock))
    if isinstance(case.wake.get("request_file"), str):  # a JobClaw request file (§7)
        outbound.append(
            Outbound(
                Purpose.REQUEST_FILE,
                Via.FILE,
                case.wake["request_file"],
                payload={**payload, "closed_at": now.isoformat()},
            )
        )
    if isinstance(case.wake.get("command_file"), str):  # a pipeline's orchestrator (§6)
        record = command_record(case.id, case.pipeline, close, closed_at=now.isoformat())
        outbound.append(
            Outbound(Purpose.COMMAND_FILE, Via.FILE, case.wake["command_file"], payload=record)
        )
    return outbound
