"""Recording an operator's answer: the first deciding reply wins, every reply is kept."""

from __future__ import annotations

from collections.abc import Sequence
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
    lock_escalation,
    record_reply,
    reply_by_platform_id,
)
from models.tables import Decision, Escalation
from workers.answering import token_hash
from workers.pipelines import answers_now, charge_command
from workers.runtime import Runtime
from workers.stage_runs import nudge
from workflows.case import Option
from workflows.design import parse_design
from workflows.errors import NotFound
from workflows.pipeline import command_option
from workflows.replies import GRAMMAR_VERSION, ReplyMatch, clarification, parse_reply
from workflows.reply_vocabulary import match_option_name
from workflows.responders import may_decide
from workflows.secrets import scan_text
from workflows.stage_results import Stage
from workflows.stages import decide
from workflows.states import OPEN_FOR_DECISION, TERMINAL, State

# Outcomes that did not decide because of the case, not the words: HTTP 409.
CONFLICTS = frozenset({"superseded", "too_early"})
# Outcomes refused because of the reply itself: HTTP 422 (over_cap: a §6 cap is spent).
REFUSALS = frozenset({"unknown_option", "withheld", "over_cap"})
# The responder may not decide this case (the design's responder policy): HTTP 403.
FORBIDDEN = frozenset({"not_allowed"})


@dataclass(frozen=True)
class Answer:
    """What became of a reply: decided, comment, ambiguous, superseded, too early, refused."""

    escalation_id: str
    outcome: str
    message: str
    option: str | None = None
    decision: dict[str, Any] | None = None

    @property
    def decided(self) -> bool:
        return self.outcome == "decided"


def _valid_answers(row: Escalation) -> str:
    return ", ".join(option["label"] for option in row.options)


def _understand(row: Escalation, option: str | None, text: str) -> tuple[ReplyMatch, str | None]:
    """The reply's match, or a refusal outcome when it names no option or holds a secret."""
    kinds = scan_text(text)
    if kinds:
        return ReplyMatch("comment"), "withheld"
    options = case_of(row).options
    if option is not None:
        chosen = match_option_name(options, option)
        if chosen is None:
            return ReplyMatch("comment"), "unknown_option"
        return ReplyMatch("decision", chosen, "option"), None
    destructive = destructive_labels(row, options)
    if row.pipeline:  # the §6 commands, as far as the caps allowed when the case opened
        accepted = row.pipeline.get("accepted", [])
        return (
            parse_reply(
                text, options, pipeline=True, allowed_commands=accepted, destructive=destructive
            ),
            None,
        )
    return parse_reply(text, options, destructive=destructive), None


def destructive_labels(row: Escalation, options: Sequence[Option]) -> frozenset[str]:
    """Answers that need CONFIRM: marked so by the run or the design, and, on a critical
    case, any answer that stops the run (SPEC: STOP on critical cases)."""
    named = {label.lower() for label in parse_design(row.design, source=row.id).destructive_options}
    critical = row.severity == "critical"
    return frozenset(
        o.label
        for o in options
        if o.destructive or o.label.lower() in named or (critical and not o.resumes)
    )


def answer(
    runtime: Runtime,
    escalation_id: str,
    *,
    option: str | None = None,
    text: str | None = None,
    responder: str,
    channel: str,
    message_id: str | None = None,
) -> Answer:
    """Match and record one reply; decide the case if it is the first deciding one.

    `message_id` is the platform's id for the message: a second delivery of it is
    recognised and changes nothing.
    """
    now = datetime.now(UTC)
    raw = option if option is not None else (text or "")
    try:
        with transaction(runtime.engine) as session:
            row = lock_escalation(session, escalation_id)
            if row is None:
                raise NotFound(f"no escalation {escalation_id}")
            if message_id and (seen := reply_by_platform_id(session, channel, message_id)):
                return Answer(
                    row.id, "duplicate", f"Already received this message (it was {seen.outcome})."
                )
            result = _answer_locked(session, row, option, raw, responder, channel, now, message_id)
    except IntegrityError:
        # Another reply decided (or the same message arrived) between our read and our
        # commit: the database kept one.
        return _record_superseded(runtime, escalation_id, raw, responder, channel)
    if result.decided:
        nudge(runtime.app, Stage.CLOSE, escalation_id)
    return result


def _answer_locked(
    session: Session,
    row: Escalation,
    option: str | None,
    raw: str,
    responder: str,
    channel: str,
    now: datetime,
    message_id: str | None = None,
) -> Answer:
    match, refusal = _understand(row, option, raw)

    def keep(outcome: str, *, text: str = raw) -> int | None:
        chosen = match.option.label if match.option else None
        audit = {
            "platform_message_id": message_id,
            "parsed": {} if refusal == "withheld" else match.to_dict(),
            "grammar_version": GRAMMAR_VERSION,
            "token_id": row.reply_token_hash[:12] if row.reply_token_hash else None,
        }
        reply = record_reply(
            session,
            row,
            channel=channel,
            sender=responder,
            text=text,
            option=chosen,
            matched_by=match.matched_by,
            outcome=outcome,
            now=now,
            audit=audit,
        )
        return reply.id

    if refusal == "withheld":
        # Never store a secret: the audit keeps that a reply came, not what it said.
        kinds = ", ".join(scan_text(raw))
        keep("withheld", text=f"[withheld: contains a secret ({kinds})]")
        return Answer(row.id, "withheld", f"Not recorded: the reply contains a secret ({kinds}).")
    if refusal == "unknown_option":
        keep("unknown_option")
        return Answer(
            row.id, "unknown_option", f"option {option!r} is not one of: {_valid_answers(row)}"
        )
    existing = decision_of(session, row.id)
    if existing is not None or State(row.state) in TERMINAL:
        keep("superseded")
        return _superseded(row, existing)
    if not match.decides:
        outcome = "needs_confirmation" if match.needs_confirmation else match.kind
        if match.reason == "not_allowed":  # a command the caps no longer allow
            outcome = "over_cap"
        keep(outcome)
        return Answer(
            row.id, outcome, "Recorded. " + clarification(answers_now(session, row), match=match)
        )
    if State(row.state) not in OPEN_FOR_DECISION:
        keep("too_early")
        return Answer(
            row.id,
            "too_early",
            f"Escalation {row.id} is still being routed ({row.state}); answer again in a moment.",
        )
    chosen = match.option
    if chosen is None:  # a command typed but never offered (SKIP)
        assert match.command is not None
        chosen = command_option(match.command)
    verdict = may_decide(
        parse_design(row.design, source=f"escalation {row.id}"),
        severity=row.severity,
        trigger_type=row.trigger_type,
        responder=responder,
        owner=row.owner,
        resumes=chosen.resumes,
    )
    if not verdict.allowed:
        keep("not_allowed")
        return Answer(row.id, "not_allowed", f"Not decided: {verdict.reason}.")
    if row.pipeline and (spent := charge_command(session, row, chosen.value, now=now)):
        keep("over_cap")
        return Answer(row.id, "over_cap", f"Not decided: {spent}.")
    reply_id = keep("decided")
    result = decide(case_of(row), chosen, responder=responder, channel=channel, now=now)
    apply_result(session, row, result, now=now, reply_id=reply_id)
    session.flush()  # the unique key on decisions settles a race here or at commit
    decision = decision_of(session, row.id)
    assert decision is not None
    return Answer(
        row.id,
        "decided",
        f"Decided: {chosen.label}.",
        chosen.label,
        decision_json(decision),
    )


def _superseded(row: Escalation, existing: Decision | None) -> Answer:
    if existing is None:
        return Answer(
            row.id, "superseded", f"Escalation {row.id} is {row.state}; nothing to decide."
        )
    when = at.isoformat(timespec="seconds") if (at := as_utc(existing.at)) else "earlier"
    return Answer(
        row.id,
        "superseded",
        f"Already decided: {existing.option} by {existing.decided_by} at {when}. "
        "Your reply was recorded.",
        existing.option,
        decision_json(existing),
    )


def _record_superseded(
    runtime: Runtime, escalation_id: str, raw: str, responder: str, channel: str
) -> Answer:
    now = datetime.now(UTC)
    kinds = scan_text(raw)  # this path, too, never stores a secret
    text = f"[withheld: contains a secret ({', '.join(kinds)})]" if kinds else raw
    with transaction(runtime.engine) as session:
        row = lock_escalation(session, escalation_id)
        assert row is not None
        record_reply(
            session,
            row,
            channel=channel,
            sender=responder,
            text=text,
            option=None,
            matched_by=None,
            outcome="superseded",
            now=now,
        )
        return _superseded(row, decision_of(session, escalation_id))


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
