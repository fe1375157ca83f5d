"""Recording an operator's answer: the first deciding reply wins, every reply is kept."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from models.db import transaction
from models.store import (
    apply_result,
    as_utc,
    case_of,
    decision_json,
    decision_of,
    design_of,
    lock_escalation,
    lock_pipeline_phase,
    record_reply,
    reply_by_platform_id,
    write_case,
)
from models.tables import Decision, Escalation
from workers.answering import case_token, token_hash
from workers.pipelines import counted, save_counters
from workers.runtime import Runtime
from workers.stage_runs import nudge
from workflows.design import Design
from workflows.errors import InvalidInput, NotFound
from workflows.identities import Responder
from workflows.judgement import (
    Judgement,
    PipelineFacts,
    PriorDecision,
    ReplyContext,
    ReplyOutcome,
    consequence,
    destructive_labels,
    judge,
    superseded_message,
    withheld_marker,
)
from workflows.limits import reply_refusals
from workflows.pipeline import Counters
from workflows.replies import GRAMMAR_VERSION
from workflows.secrets import scan_text
from workflows.stage_results import Stage
from workflows.stages import decide
from workflows.states import MAY_HAVE_DECISION, State


@dataclass(frozen=True)
class Answer:
    """What became of a reply, as its sender is told."""

    escalation_id: str
    outcome: ReplyOutcome
    message: str
    option: str | None = None
    decision: dict[str, Any] | None = None

    @property
    def decided(self) -> bool:
        return self.outcome is ReplyOutcome.DECIDED


def answer(
    runtime: Runtime,
    escalation_id: str,
    *,
    option: str | None = None,
    text: str | None = None,
    responder: Responder | str,
    channel: str,
    message_id: str | None = None,
    confirmed: bool = True,
) -> Answer:
    """Judge and record one reply; decide the case if it is the first deciding one.

    `responder` is who the server authenticated; a bare string is an unverified identity.
    `message_id` is the platform's id for the message: a second delivery of it is
    recognised and changes nothing. A link or the dashboard passes `confirmed=False` until
    a destructive option has been confirmed a second time.
    """
    who = responder if isinstance(responder, Responder) else Responder(responder)
    unfit = reply_refusals(
        {
            "sender": who.identity,
            "note": who.note,
            "channel": channel,
            "message_id": message_id,
            "option": option,
            "text": text,
        }
    )
    # Who sent it and the platform's id are stored, logged and copied into the decision,
    # DECISION.md and the command file: a secret there is refused, never kept.
    unfit += [
        f"{name}: contains a secret ({', '.join(kinds)})"
        for name, value in (
            ("sender", who.identity),
            ("note", who.note),
            ("message_id", message_id),
        )
        if value and (kinds := scan_text(value))
    ]
    if unfit:  # refused whole, before the case is locked: nothing half-stored, no 500
        raise InvalidInput("; ".join(unfit))
    now = datetime.now(UTC)
    try:
        with transaction(runtime.engine) as session:
            row = lock_escalation(session, escalation_id)
            if row is None:
                raise NotFound(f"no escalation {escalation_id}")
            if message_id and (seen := reply_by_platform_id(session, channel, message_id)):
                return Answer(
                    row.id,
                    ReplyOutcome.DUPLICATE,
                    f"Already received this message (it was {seen.outcome}).",
                )
            context = _context(session, row, now=now)
            verdict = judge(
                context,
                option=option,
                text=text or "",
                responder=who,
                confirmed=confirmed,
                code=case_token(runtime.answer_key, row.id, row.pipeline),
            )
            result = _record(session, row, verdict, who, channel, now, message_id)
    except IntegrityError:
        # Another reply decided (or the same message arrived) between our read and our
        # commit: the database kept one.
        raw = option if option is not None else (text or "")
        return _record_superseded(runtime, escalation_id, raw, who.identity, channel)
    if result.decided:
        nudge(runtime.app, Stage.CLOSE, escalation_id)
    return result


def _context(session: Session, row: Escalation, *, now: datetime) -> ReplyContext:
    """The locked case as the judge reads it; a pipeline's phase is locked too."""
    counters = None
    if row.pipeline:
        facts = row.pipeline
        counters = counted(
            lock_pipeline_phase(session, facts["pipeline_id"], facts["phase"], now=now)
        )
    prior = _prior(decision_of(session, row.id)) if row.state in MAY_HAVE_DECISION else None
    return reply_context(row, design_of(row), prior=prior, counters=counters)


def reply_context(
    row: Escalation,
    design: Design,
    *,
    prior: PriorDecision | None = None,
    counters: Counters | None = None,
) -> ReplyContext:
    """The case as the reply judge reads it; a pipeline's caps are `counters` as locked now,
    or as accepted at opening when not given."""
    pipeline = None
    if row.pipeline:
        pipeline = PipelineFacts(
            phase=str(row.pipeline.get("phase", "")),
            accepted=tuple(row.pipeline.get("accepted", [])),
            offered=tuple(row.pipeline.get("offered", [])),
            counters=counters or Counters(),
        )
    return ReplyContext(
        case_id=row.id,
        state=State(row.state),
        options=tuple(case_of(row).options),
        severity=row.severity,
        trigger_type=row.trigger_type,
        owner=row.owner,
        design=design,
        prior=prior,
        pipeline=pipeline,
    )


def _prior(decision: Decision | None) -> PriorDecision | None:
    if decision is None:
        return None
    return PriorDecision(
        decision.option, decision.decided_by, as_utc(decision.at), decision.is_default
    )


def _record(
    session: Session,
    row: Escalation,
    verdict: Judgement,
    who: Responder,
    channel: str,
    now: datetime,
    message_id: str | None,
) -> Answer:
    """Keep the reply with its outcome; on a decision, charge the caps and decide."""
    match = verdict.match
    withheld = verdict.outcome is ReplyOutcome.WITHHELD
    parsed = {} if withheld else match.to_dict()
    if who.note:  # a name the caller gave: kept beside the reply, decides nothing
        parsed = {**parsed, "note": who.note}
    reply = record_reply(
        session,
        row,
        channel=channel,
        sender=who.identity,
        text=verdict.text,
        option=match.option.label if match.option else None,
        matched_by=match.matched_by,
        outcome=verdict.outcome,
        now=now,
        audit={
            "platform_message_id": message_id,
            "parsed": parsed,
            "grammar_version": GRAMMAR_VERSION,
            "token_id": row.reply_token_hash[:12] if row.reply_token_hash else None,
        },
    )
    prior = decision_of(session, row.id) if verdict.outcome is ReplyOutcome.SUPERSEDED else None
    if not verdict.decided or verdict.chosen is None:
        decided = decision_json(prior) if prior else None
        return Answer(
            row.id, verdict.outcome, verdict.message, prior.option if prior else None, decided
        )
    if verdict.counters is not None:
        save_counters(session, row, verdict.counters, now=now)
    chosen = verdict.chosen
    result = decide(case_of(row), chosen, responder=who.identity, channel=channel, now=now)
    decision = apply_result(session, row, result, now=now, reply_id=reply.id)
    assert decision is not None  # written already: a race with another answer raised there
    write_case(session, row)
    return Answer(row.id, verdict.outcome, verdict.message, chosen.label, decision_json(decision))


def _record_superseded(
    runtime: Runtime, escalation_id: str, raw: str, responder: str, channel: str
) -> Answer:
    now = datetime.now(UTC)
    kinds = scan_text(raw)  # this path, too, never stores a secret
    with transaction(runtime.engine) as session:
        row = lock_escalation(session, escalation_id)
        assert row is not None
        record_reply(
            session,
            row,
            channel=channel,
            sender=responder,
            text=withheld_marker(kinds) if kinds else raw,
            option=None,
            matched_by=None,
            outcome=ReplyOutcome.SUPERSEDED,
            now=now,
        )
        context = _context(session, row, now=now)
        existing = decision_of(session, escalation_id)
        return Answer(
            row.id,
            ReplyOutcome.SUPERSEDED,
            superseded_message(context),
            existing.option if existing else None,
            decision_json(existing) if existing else None,
        )


TOKEN_GRACE = timedelta(days=1)  # late replies are still told what was decided


def find_by_token(runtime: Runtime, token: str) -> str | None:
    """The case a correlation token belongs to, while it is open or recently closed."""
    digest = token_hash(runtime.answer_key, token)
    now = datetime.now(UTC)
    with transaction(runtime.engine) as session:
        row = session.exec(select(Escalation).where(Escalation.reply_token_hash == digest)).first()
        if row is None:
            return None
        closed = as_utc(row.closed_at)
        if closed is not None and now > closed + TOKEN_GRACE:
            return None  # expired: the same answer as unknown
        return row.id


def dangerous_options(runtime: Runtime, escalation_id: str) -> dict[str, str]:
    """Each destructive option of the case, with the consequence its confirmation states."""
    with transaction(runtime.engine) as session:
        row = session.get(Escalation, escalation_id)
        return {} if row is None else dangers_of(session, row)


def dangers_of(session: Session, row: Escalation) -> dict[str, str]:
    """dangerous_options, in a session already open."""
    context = _context(session, row, now=datetime.now(UTC))
    labels = destructive_labels(context)
    return {o.label: consequence(o) for o in context.options if o.label in labels}
