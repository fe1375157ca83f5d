"""Judging one reply against a locked case: what it means and what becomes of it, no I/O.

The order is the product's rule, read top to bottom: a secret is never stored; an option
that is not the case's is refused; a decided case decides nothing more; a reply that does
not decide is recorded with the answers that still run; a case still being routed cannot
be decided yet; the responder policy; a pipeline's caps; and only then, a decision.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from workflows.case import Option
from workflows.design import Design
from workflows.identities import Responder
from workflows.pipeline import Counters, charge, command_option, executable
from workflows.replies import ReplyMatch, clarification, parse_reply
from workflows.reply_vocabulary import match_option_name
from workflows.responders import may_decide
from workflows.secrets import scan_text
from workflows.states import OPEN_FOR_DECISION, TERMINAL, State


class ReplyOutcome(StrEnum):
    """What became of one reply; stored on the reply row and returned to whoever sent it."""

    DECIDED = "decided"
    COMMENT = "comment"
    AMBIGUOUS = "ambiguous"
    NEEDS_CONFIRMATION = "needs_confirmation"
    UNKNOWN_OPTION = "unknown_option"  # an option name that is not the case's
    WITHHELD = "withheld"  # it held a secret: kept as a marker, never as text
    SUPERSEDED = "superseded"  # the case was decided (or closed) already
    TOO_EARLY = "too_early"  # the case is still being routed
    NOT_ALLOWED = "not_allowed"  # the responder policy refused this responder
    OVER_CAP = "over_cap"  # a pipeline command whose cap is spent
    DUPLICATE = "duplicate"  # the platform delivered the same message again
    ACKNOWLEDGED = "acknowledged"  # "ack" / "on it": who is on the case; nothing decided


@dataclass(frozen=True)
class PriorDecision:
    """The decision a case already has, as a late replier is told it."""

    option: str
    decided_by: str
    at: datetime | None
    is_default: bool = False


@dataclass(frozen=True)
class PipelineFacts:
    """A pipeline case's commands: those the caps allowed at opening, and the phase's
    counters now, read under the phase's lock (another case may have spent a reset)."""

    phase: str
    accepted: tuple[str, ...]
    offered: tuple[str, ...]
    counters: Counters


@dataclass(frozen=True)
class ReplyContext:
    """What the judge needs of a case the worker has locked."""

    case_id: str
    state: State
    options: tuple[Option, ...]
    severity: str
    trigger_type: str
    owner: str | None
    design: Design
    prior: PriorDecision | None = None
    pipeline: PipelineFacts | None = None


@dataclass(frozen=True)
class Judgement:
    """The verdict on one reply: what to record, what to say, and what to decide."""

    outcome: ReplyOutcome
    message: str
    match: ReplyMatch
    text: str  # what the reply row keeps: the reply itself, or a marker for a secret
    chosen: Option | None = None  # the option decided (DECIDED only)
    counters: Counters | None = None  # a pipeline phase's counters after the charge

    @property
    def decided(self) -> bool:
        return self.outcome is ReplyOutcome.DECIDED


def judge(
    case: ReplyContext,
    *,
    option: str | None,
    text: str,
    responder: Responder,
    confirmed: bool = True,
    code: str = "",
) -> Judgement:
    """Judge a reply that names an `option` (a button, a link, the API) or is free `text`.

    A link or the dashboard naming a destructive option passes `confirmed=False` until the
    person has confirmed a second time; `code` goes into the hint to confirm in chat.
    """
    raw = option if option is not None else text
    kinds = scan_text(raw)
    if kinds:
        listed = ", ".join(kinds)
        return Judgement(
            ReplyOutcome.WITHHELD,
            f"Not recorded: the reply contains a secret ({listed}).",
            ReplyMatch("comment"),
            withheld_marker(kinds),
        )
    match = understand(case, option, raw)
    if (
        match is not None
        and option is not None
        and not confirmed
        and match.option is not None
        and match.option.label in destructive_labels(case)
    ):
        match = ReplyMatch("decision", match.option, "option", needs_confirmation=True)
    if match is None:
        valid = ", ".join(o.label for o in case.options)
        return Judgement(
            ReplyOutcome.UNKNOWN_OPTION,
            f"option {option!r} is not one of: {valid}",
            ReplyMatch("comment"),
            raw,
        )

    def verdict(outcome: ReplyOutcome, message: str) -> Judgement:
        return Judgement(outcome, message, match, raw)

    if case.prior is not None or case.state in TERMINAL:
        return verdict(ReplyOutcome.SUPERSEDED, superseded_message(case))
    if not match.decides:
        outcome = ReplyOutcome.NEEDS_CONFIRMATION if match.needs_confirmation else None
        if match.reason == "not_allowed":  # a command the caps no longer allow
            outcome = ReplyOutcome.OVER_CAP
        outcome = outcome or ReplyOutcome(match.kind)
        hint = clarification(answers_now(case), match=match, code=code)
        if match.needs_confirmation and option is not None and match.option is not None:
            hint = consequence(match.option)
        return verdict(outcome, "Recorded. " + hint)
    if case.state not in OPEN_FOR_DECISION:
        return verdict(
            ReplyOutcome.TOO_EARLY,
            f"Escalation {case.case_id} is still being routed ({case.state}); "
            "answer again in a moment.",
        )
    chosen = match.option
    if chosen is None:  # a command typed but never offered (SKIP)
        assert match.command is not None
        chosen = command_option(match.command)
    allowed = may_decide(
        case.design,
        severity=case.severity,
        trigger_type=case.trigger_type,
        responder=responder.identity,
        owner=case.owner,
        resumes=chosen.resumes,
        verified=responder.verified,
    )
    if not allowed.allowed:
        return verdict(ReplyOutcome.NOT_ALLOWED, f"Not decided: {allowed.reason}.")
    counters = None
    if case.pipeline is not None:
        counters = charge(case.pipeline.counters, chosen.value)
        if counters is None:
            return verdict(ReplyOutcome.OVER_CAP, f"Not decided: {spent(case.pipeline, chosen)}.")
    return Judgement(
        ReplyOutcome.DECIDED, f"Decided: {chosen.label}.", match, raw, chosen, counters
    )


def understand(case: ReplyContext, option: str | None, text: str) -> ReplyMatch | None:
    """The reply's match; None when it names an option the case does not have."""
    if option is not None:
        chosen = match_option_name(case.options, option)
        return None if chosen is None else ReplyMatch("decision", chosen, "option")
    destructive = destructive_labels(case)
    if case.pipeline is not None:  # the §6 commands, as far as the caps allowed at opening
        return parse_reply(
            text,
            case.options,
            pipeline=True,
            allowed_commands=case.pipeline.accepted,
            destructive=destructive,
        )
    return parse_reply(text, case.options, destructive=destructive)


def consequence(option: Option) -> str:
    """What a destructive answer does, as its second confirmation states it."""
    what = f" {option.description.rstrip('.')}." if option.description else ""
    return f"“{option.label}” cannot be undone.{what} Confirm once more to go ahead."


def destructive_labels(case: ReplyContext) -> frozenset[str]:
    """Answers that need CONFIRM: marked so by the run or the design, and, on a critical
    case, any answer that stops the run (SPEC: STOP on critical cases)."""
    named = {label.lower() for label in case.design.destructive_options}
    critical = case.severity == "critical"
    return frozenset(
        o.label
        for o in case.options
        if o.destructive or o.label.lower() in named or (critical and not o.resumes)
    )


def answers_now(case: ReplyContext) -> Sequence[Option]:
    """The answers a reply may still choose: for a pipeline, what its counters allow now."""
    if case.pipeline is None:
        return case.options
    still = set(executable(case.pipeline.counters, [o.label for o in case.options]))
    return tuple(o for o in case.options if o.label in still)


def spent(pipeline: PipelineFacts, chosen: Option) -> str:
    counters = pipeline.counters
    still = ", ".join(executable(counters, pipeline.offered)) or "(none)"
    return (
        f"{chosen.value} cannot run: phase {pipeline.phase} has used {counters.resets} resets "
        f"and {counters.nuclear} nuclear resets. Reply with one of: {still}"
    )


def superseded_message(case: ReplyContext) -> str:
    """What a late replier is told: what was decided, by whom and when; or the case's state."""
    prior = case.prior
    if prior is None:
        return f"Escalation {case.case_id} is {case.state}; nothing to decide."
    when = prior.at.isoformat(timespec="seconds") if prior.at else "earlier"
    if prior.is_default:
        return (
            f"Nobody answered in time: the default {prior.option} applied at {when}. "
            "Your reply was recorded."
        )
    return (
        f"Already decided: {prior.option} by {prior.decided_by} at {when}. Your reply was recorded."
    )


def withheld_marker(kinds: Sequence[str]) -> str:
    """What a reply row keeps in place of a reply that held a secret."""
    return f"[withheld: contains a secret ({', '.join(kinds)})]"
