"""Routing by the tier's clock (SPEC §3 stages 2-5): the notice, one follow-up, the default."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from workflows.case import Case
from workflows.chains import chain_note, chain_pages
from workflows.design import Design, Tier
from workflows.notifications import (
    RouteFacts,
    every_form,
    render_chain_page,
    render_follow_up,
    render_notification,
)
from workflows.packet_checks import check_packet
from workflows.payloads import ChainPlace, Form, PageForms
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
from workflows.states import State, TransitionRefused, check_transition
from workflows.vocabulary import TimeoutAction
from workflows.working_hours import page_time

# A pipeline nobody answered halts: the orchestrator is never sent a reset no one chose.
PIPELINE_TIMEOUT_COMMAND = "STOP"


def clock_start(tier: Tier, severity: str, routed_at: datetime) -> datetime:
    """When the tier's window starts: at routing, or when its working hours next open."""
    return page_time(tier.hours, severity, routed_at)


def route_facts(design: Design, case: Case, *, now: datetime | None = None) -> RouteFacts:
    """The facts of the tier a case is routed to."""
    severity = str(case.packet["severity"])
    tier = design.tier(severity)
    action = design.timeout_action(severity, str(case.packet["trigger_type"])).value
    routed = case.routed_at or now
    return RouteFacts(
        severity=severity,
        window=tier.window,
        timeout=tier.timeout,
        timeout_action=PIPELINE_TIMEOUT_COMMAND if case.pipeline else action,
        waiting_behavior=str(case.packet.get("waiting_behavior")),
        design=f"{design.name} v{design.version}",
        clock_from=clock_start(tier, severity, routed) if routed else None,
    )


def route_case(case: Case, design: Design, *, public_url: str, now: datetime) -> StageResult:
    """Stage 2 and the routing half of 3: recheck the packet, pick the tier, queue sends."""
    result = check_packet(dict(case.packet))
    if not result.passed:
        return StageResult(
            state=check_transition(case.state, State.REFUSED),
            events=(EventSpec("refused", {"errors": result.error_lines()}),),
            updates=CaseUpdate(problems=tuple(result.error_lines()), drop_packet=True),
        )
    facts = route_facts(design, case, now=now)
    tier = design.tier(facts.severity)
    start = facts.clock_from or now
    later = start if start > now else None
    notify = [
        *tier_pages(case, design, public_url=public_url, now=now),
        *_chain(case, tier, facts, start, public_url=public_url, now=now),
    ]
    events = [EventSpec("validated", {"warnings": list(result.warnings)})]
    if tier.waiting_behavior.value != facts.waiting_behavior:
        events.append(
            EventSpec(
                "waiting_differs",
                {"packet": facts.waiting_behavior, "design": tier.waiting_behavior.value},
            )
        )
    events.append(
        EventSpec(
            "routed",
            {
                "severity": facts.severity,
                "primary": tier.recipient.primary,
                "copies": list(tier.recipient.copies),
                "window_seconds": tier.window.total_seconds(),
                "timeout_seconds": tier.timeout.total_seconds(),
                "timeout_action": facts.timeout_action,
                "design": facts.design,
                **({"held_for_hours_until": later.isoformat()} if later else {}),
                **({"chain_pages": chained} if (chained := _count_chain(notify)) else {}),
            },
        )
    )
    return StageResult(
        state=check_transition(case.state, State.AWAITING),
        events=tuple(events),
        next_action_at=start + tier.window,
        outbound=tuple(notify),
        updates=CaseUpdate(routed_at=now),
        next_stage=Stage.DELIVER,
    )


def tier_pages(
    case: Case, design: Design, *, public_url: str, now: datetime
) -> tuple[Outbound, ...]:
    """The first page of the case's tier: its primary, and each copy marked as a copy; held
    for the tier's working hours below critical."""
    facts = route_facts(design, case, now=now)
    tier = design.tier(facts.severity)
    sent_at = page_time(tier.hours, facts.severity, now)
    later = sent_at if sent_at > now else None
    notify = [
        _page(
            Purpose.NOTIFY,
            tier.recipient.primary,
            Role.PRIMARY,
            every_form(render_notification, case, facts, public_url=public_url, at=now),
            not_before=later,
        )
    ]
    for tag in tier.recipient.copies:
        forms = every_form(
            render_notification,
            case,
            facts,
            public_url=public_url,
            at=now,
            copy_for=tier.recipient.primary,
        )
        notify.append(_page(Purpose.NOTIFY, tag, Role.COPY, forms, not_before=later))
    return tuple(notify)


def follow_up(case: Case, design: Design, *, public_url: str, now: datetime) -> StageResult:
    """Stage 4: the window passed undecided, so send exactly one follow-up."""
    facts = route_facts(design, case, now=now)
    tier = design.tier(facts.severity)
    sent_at = page_time(tier.hours, facts.severity, now)
    later = sent_at if sent_at > now else None
    outbound = []
    # Someone is on it: no reminder and no next tier. A chain's levels are its reminders.
    quiet = case.acknowledged_by is not None or tier.chain is not None
    if not quiet:
        forms = every_form(render_follow_up, case, facts, public_url=public_url, at=now)
        outbound.append(
            _page(Purpose.FOLLOW_UP, tier.recipient.primary, Role.PRIMARY, forms, not_before=later)
        )
    if tier.next_tier is not None and not quiet:
        next_primary = design.tier(tier.next_tier).recipient.primary
        if next_primary != tier.recipient.primary:
            forms = every_form(
                render_follow_up, case, facts, public_url=public_url, at=now, next_tier=True
            )
            outbound.append(
                _page(Purpose.FOLLOW_UP, next_primary, Role.NEXT_TIER, forms, not_before=later)
            )
    deadline = (facts.clock_from or now) + tier.timeout + case.extended
    # A reminder held for working hours still gets the time to be answered it would have had.
    if later is not None and outbound:
        deadline = max(deadline, later + (tier.timeout - tier.window))
    deadline = max(deadline, now)
    detail: dict[str, Any] = {
        "cites": case.packet_id,
        "recipients": [item.target for item in outbound],
    }
    if case.acknowledged_by is not None:
        detail["acknowledged_by"] = case.acknowledged_by
    elif tier.chain is not None:
        detail["chain"] = True
    if later is not None and outbound:
        detail["held_for_hours_until"] = later.isoformat()
    return StageResult(
        state=check_transition(case.state, State.FOLLOWED_UP),
        events=(EventSpec("followed_up", detail),),
        next_action_at=deadline,
        outbound=tuple(outbound),
        updates=CaseUpdate(followed_up_at=now),
        next_stage=Stage.DELIVER if outbound else None,
    )


def apply_timeout(case: Case, design: Design, *, public_url: str, now: datetime) -> StageResult:
    """Stage 5: nobody decided in time, so the design's default becomes the decision; or,
    for `hold`, nothing is decided and every tier above is paged."""
    facts = route_facts(design, case)
    if facts.timeout_action == TimeoutAction.HOLD and not case.pipeline:
        return hold(case, design, facts, public_url=public_url, now=now)
    if case.pipeline:
        action, resumes = PIPELINE_TIMEOUT_COMMAND, False
    else:
        action = facts.timeout_action
        resumes = TimeoutAction(action) is not TimeoutAction.ABORT
    decision = DecisionSpec(
        option=action,
        value=action,
        resumes=resumes,
        decided_by=f"{SYSTEM} (timeout default)",
        channel=SYSTEM,
        is_default=True,
    )
    return StageResult(
        state=check_transition(case.state, State.DECIDED),
        events=(
            EventSpec(
                "timeout_default",
                {"action": action, "after_seconds": facts.timeout.total_seconds()},
            ),
        ),
        updates=CaseUpdate(decided_at=now),
        decision=decision,
        next_stage=Stage.CLOSE,
    )


def hold(
    case: Case, design: Design, facts: RouteFacts, *, public_url: str, now: datetime
) -> StageResult:
    """A `hold` timeout: no default; each tier above the follow-up's is paged once, and the
    case waits for a person with no deadline (it is never decided by the clock)."""
    if case.state is not State.FOLLOWED_UP:  # it stays there: no transition to check
        raise TransitionRefused(f"only a followed_up case is held; this one is {case.state}")
    tier = design.tier(facts.severity)
    if case.acknowledged_by is not None:  # someone is on it: wait for them, page nobody
        return StageResult(
            state=State.FOLLOWED_UP,
            events=(
                EventSpec(
                    "held",
                    {
                        "after_seconds": facts.timeout.total_seconds(),
                        "paged": [],
                        "acknowledged_by": case.acknowledged_by,
                    },
                ),
            ),
        )
    paged = {tier.recipient.primary}
    if tier.next_tier is not None:  # the follow-up paged it already
        paged.add(design.tier(tier.next_tier).recipient.primary)
    chain = []
    above = design.tier(tier.next_tier).next_tier if tier.next_tier else None
    while above is not None:
        primary = design.tier(above).recipient.primary
        if primary not in paged:
            paged.add(primary)
            chain.append(primary)
        above = design.tier(above).next_tier
    forms = every_form(render_follow_up, case, facts, public_url=public_url, at=now, next_tier=True)
    sent_at = page_time(tier.hours, facts.severity, now)  # the case's tier's hours hold too
    later = sent_at if sent_at > now else None
    outbound = tuple(
        _page(Purpose.FOLLOW_UP, target, Role.NEXT_TIER, forms, not_before=later)
        for target in chain
    )
    return StageResult(
        state=State.FOLLOWED_UP,
        events=(
            EventSpec(
                "held",
                {"after_seconds": facts.timeout.total_seconds(), "paged": list(chain)},
            ),
        ),
        next_action_at=None,
        outbound=outbound,
        next_stage=Stage.DELIVER if outbound else None,
    )


def _count_chain(outbound: list[Outbound]) -> int:
    return sum(item.purpose is Purpose.CHAIN for item in outbound)


def _chain(
    case: Case, tier: Tier, facts: RouteFacts, start: datetime, *, public_url: str, now: datetime
) -> list[Outbound]:
    """Every page of the tier's chain, written now as waiting rows due at their level's time."""
    if tier.chain is None:
        return []
    pages = []
    for page in chain_pages(tier.chain, start=start, hours=tier.hours, severity=facts.severity):
        note = chain_note(page, tier.chain, packet_id=case.packet_id)
        forms = every_form(render_chain_page, case, facts, public_url=public_url, at=now, note=note)
        for tag in page.recipients:
            pages.append(
                _page(
                    Purpose.CHAIN,
                    tag,
                    Role.NEXT_TIER,
                    forms,
                    not_before=page.at,
                    step=page.step,
                    place=ChainPlace(level=page.level, round=page.round),
                )
            )
    return pages


def _page(
    purpose: Purpose,
    tag: str,
    role: Role,
    forms: dict[str, Form],
    *,
    not_before: datetime | None = None,
    step: int = 0,
    place: ChainPlace | None = None,
) -> Outbound:
    """A page to a tag in every form; each channel's row keeps its own (workers/per_channel.py)."""
    mail = forms[Reading.MAIL]
    payload = PageForms(forms=forms)
    if place is not None:  # a chain page's place in its chain
        payload["level"], payload["round"] = place["level"], place["round"]
    return Outbound(
        purpose,
        Via.APPRISE,
        tag,
        role,
        mail["title"],
        mail["body"],
        payload,
        step=step,
        not_before=not_before,
    )
