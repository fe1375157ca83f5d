"""An undeliverable notice escalates itself: the second packet, one severity higher.

The second case repeats the original's question and options, and its notice carries the
original's reply code and answer links, so the answer is given on the original case itself:
one decision, under that case's own rules (deciders, confirmation). When the original is
decided, the second case is settled by it and says so (`settled_by_original`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from workflows.case import Case
from workflows.design import SEVERITY_ORDER, Design
from workflows.notifications import every_form, render_chain_page, render_delivery_failure
from workflows.payloads import PageForms
from workflows.routing import route_facts
from workflows.stage_results import (
    SYSTEM,
    CaseUpdate,
    DecisionSpec,
    EventSpec,
    Outbound,
    Purpose,
    Reading,
    Role,
    Stage,
    StageResult,
    Via,
)
from workflows.states import State, check_transition
from workflows.text import one_line
from workflows.vocabulary import CRITICAL_WAITING, Severity, WaitingBehavior

FAILING_KEY = "failing_channels"  # in the second packet: every channel named so far


def delivery_failure_packet(
    case: Case, *, target: str, attempts: int, error: str, failing: Sequence[str] = ()
) -> dict[str, Any] | None:
    """The second packet that escalates an undeliverable first one; None if it is one itself.
    `failing`: the original's other channels that gave up too, each named."""
    if case.cites_id is not None:
        return None  # a failed failure-notice is recorded, never escalated again
    packet = case.packet
    severity = Severity(str(packet["severity"]))
    higher = SEVERITY_ORDER[min(SEVERITY_ORDER.index(severity) + 1, len(SEVERITY_ORDER) - 1)]
    waiting = WaitingBehavior(str(packet["waiting_behavior"]))
    if higher is Severity.CRITICAL and waiting not in CRITICAL_WAITING:
        waiting = WaitingBehavior.PAUSED
    channels = list(dict.fromkeys([target, *failing]))
    detail = render_delivery_failure(case, target=target, attempts=attempts, error=error)
    if len(channels) > 1:
        detail = one_line(f"{detail}. Also failing: {', '.join(channels[1:])}", 900)
    return {
        "packet_id": f"{case.packet_id}-undelivered",
        "run_id": case.run_id,
        "task_summary": f"Get escalation {case.packet_id} in front of its decider.",
        "severity": higher.value,
        "trigger_type": "tool_failure",
        "trigger_detail": detail,
        "attempted": [f"Sent to '{target}' {attempts} times with exponential backoff."],
        "evidence": [{"kind": "log", "ref": f"escalation {case.id} events"}],
        "completed": [],
        "remaining": [f"Decide case {case.id}: {packet.get('requested_action')}"],
        "blocked_on": f"The notification for packet {case.packet_id} could not be delivered.",
        "requested_action": f"Answer case {case.id} yourself, or fix channel '{target}'.",
        "recipient": str(packet.get("recipient")),
        "waiting_behavior": waiting.value,
        "resume_condition": f"A decision recorded on case {case.id}.",
        FAILING_KEY: channels,
        # What the second notice repeats, with the original's code and links filled at send.
        "original": {
            "case": case.id,
            "question": one_line(str(packet.get("requested_action", "")), 600),
            "options": [
                {"label": option.label, "description": one_line(option.description, 160)}
                for option in case.options
            ],
        },
    }


def channel_joined(failure: Case, channel: str) -> tuple[EventSpec, list[str]] | None:
    """Another channel of the original gave up: the event naming it on the second case and
    the new list; None when the channel is named already."""
    named = [str(c) for c in failure.packet.get(FAILING_KEY) or []]
    if channel in named:
        return None
    channels = [*named, channel]
    return EventSpec("failing_channel_joined", {"channel": channel, "failing": channels}), channels


def joined_notice(
    failure: Case, design: Design, channel: str, *, public_url: str, now: datetime
) -> Outbound:
    """The short page that tells the second case's decider another channel failed too."""
    facts = route_facts(design, failure)
    original = failure.cites_id or "?"
    note = f"ANOTHER CHANNEL FAILED for case {original}: {channel}. Answer it directly."
    forms = every_form(render_chain_page, failure, facts, public_url=public_url, at=now, note=note)
    mail = forms[Reading.MAIL]
    named = len(failure.packet.get(FAILING_KEY) or [])
    return Outbound(
        Purpose.NOTIFY,
        Via.APPRISE,
        design.tier(facts.severity).recipient.primary,
        Role.PRIMARY,
        mail["title"],
        mail["body"],
        PageForms(forms=forms),
        step=named + 1,  # one row per joined channel, beside the first notice (step 0)
    )


def settled_by_original(
    failure: Case, original_id: str, decision: DecisionSpec, *, now: datetime
) -> StageResult:
    """The original case was decided, so the second case's point is met: it is recorded as
    settled by that decision (the system records it; the person decided the original)."""
    who = "the timeout default" if decision.is_default else decision.decided_by
    return StageResult(
        state=check_transition(failure.state, State.DECIDED),
        events=(
            EventSpec(
                "settled_by_original",
                {"original": original_id, "option": decision.option, "decided_by": who},
            ),
        ),
        decision=DecisionSpec(
            option=decision.option,
            value=decision.value,
            resumes=decision.resumes,
            decided_by=f"{SYSTEM} (case {original_id} decided by {who})"[:200],
            channel=SYSTEM,
            is_default=decision.is_default,
        ),
        updates=CaseUpdate(decided_at=now),
        next_stage=Stage.CLOSE,
    )
