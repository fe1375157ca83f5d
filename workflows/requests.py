"""Request files (SPEC §7): composing one from a situation, filing it, resolving it by a reply."""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from workflows.case import Option
from workflows.design import Design
from workflows.errors import RequestInvalid
from workflows.needs_human import NeedsHuman, Situation, decide_needs_human
from workflows.replies import ReplyMatch, clarification, parse_reply
from workflows.request_parsing import parse_request
from workflows.request_policy import PolicyVerdict, apply_policy
from workflows.request_schema import PROMPT_MAX, Request, RequestStatus
from workflows.secrets import find_secrets
from workflows.vocabulary import Severity, TriggerType

DEFAULT_OPTIONS = ("Approve=approve", "Deny=deny")
# Severity of a filed request by trigger; any other trigger files as medium.
TRIGGER_SEVERITY = {TriggerType.HARM_RISK: Severity.HIGH, TriggerType.COST_RISK: Severity.HIGH}


@dataclass(frozen=True)
class Composed:
    """Compose mode's answer: the needs-human verdict and, only when true, the request."""

    verdict: NeedsHuman
    request: Request | None
    policy: PolicyVerdict | None = None  # how the request's policy text read

    def answer(self) -> dict[str, Any]:
        """The verdict as JSON, with the policy's reading beside it."""
        answer = self.verdict.to_dict()
        if self.policy is not None:
            answer["policy"] = {
                "decided": self.policy.needs_human is not None,
                "clause": self.policy.clause,
                "reason": self.policy.reason,
                "not_applied": list(self.policy.unapplied),
            }
        return answer


@dataclass(frozen=True)
class Resolution:
    """One reply read against a request: the request to write back and what it decided."""

    request: Request
    decided: bool
    note: str
    match: ReplyMatch | None = None

    def to_dict(self) -> dict[str, Any]:
        """{request_id, option, value, matched_by, raw_reply} plus decided, status and a note."""
        reply = self.request.replies[-1]
        decision = dict(self.request.decision or {}) if self.decided else {}
        return {
            "request_id": self.request.id,
            "option": decision.get("option"),
            "value": decision.get("value"),
            "matched_by": decision.get("matched_by"),
            "raw_reply": reply["raw_reply"],
            "decided": self.decided,
            "status": self.request.status.value,
            "kind": reply["kind"],
            "reason": reply["reason"],
            "note": self.note,
        }


def situation_from_inputs(
    description: str,
    *,
    trigger: str | None = None,
    counters: Iterable[str] = (),
    missing: Iterable[str] = (),
    case: str | None = None,
    recoverable: bool = False,
    repo_answers: bool = False,
) -> Situation:
    """The compose inputs as a Situation; counters are NAME=NUMBER. Raises RequestInvalid."""
    problems: list[str] = []
    if not description.strip():
        problems.append("situation: must not be empty")
    trigger_type = None
    if trigger is not None:
        try:
            trigger_type = TriggerType(trigger.strip().lower())
        except ValueError:
            valid = ", ".join(t.value for t in TriggerType)
            problems.append(f"trigger_type: {trigger!r} is not one of {valid}")
    numbers: dict[str, float] = {}
    for item in counters:
        name, sep, text = item.partition("=")
        try:
            number = float(text) if sep and name.strip() else math.nan
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            problems.append(f"counters: {item!r} is not NAME=NUMBER (e.g. spend_usd=72.5)")
        else:
            numbers[name.strip()] = number
    if problems:
        raise RequestInvalid(problems)
    return Situation(
        trigger_type=trigger_type,
        counters=numbers,
        missing_inputs=frozenset(name.strip() for name in missing if name.strip()),
        case=case,
        recoverable=recoverable,
        repo_answers=repo_answers,
        description=description.strip(),
    )


def compose(
    design: Design,
    situation: Situation,
    *,
    policy: str,
    request_id: str,
    now: datetime,
    prompt: str | None = None,
    options: Sequence[str] = (),
    timeout_minutes: int | None = None,
    timeout_action: str | None = None,
    context_refs: Sequence[str] = (),
    configured: Collection[str] = (),
) -> Composed:
    """Decide needs-human (the design, then the policy text beside it: workflows/
    request_policy.py); when true, build the checked request. Raises RequestInvalid."""
    verdict, read, trigger_or_none = _needs_human(design, situation, policy, configured)
    if not verdict.needs_human or trigger_or_none is None:
        return Composed(verdict, None, read)
    trigger = trigger_or_none
    severity = TRIGGER_SEVERITY.get(trigger, Severity.MEDIUM)
    tier_minutes = math.ceil(design.tier(severity).timeout.total_seconds() / 60)
    data = {
        "request_id": request_id,
        "created_at": now.isoformat(),
        "situation": situation.description,
        "policy": policy.strip(),
        "prompt": prompt if prompt is not None else default_prompt(situation, options),
        "options": [_option_from_text(text) for text in options or DEFAULT_OPTIONS],
        "timeout_default": {
            "after_minutes": timeout_minutes
            if timeout_minutes is not None
            else max(tier_minutes, 1),
            "action": timeout_action or design.timeout_action(severity, trigger).value,
        },
        "context_refs": list(context_refs),
        "status": RequestStatus.OPEN.value,
        "trigger_type": trigger.value,
        "severity": severity.value,
        "needs_human": {"reason": verdict.reason, "rule": verdict.rule},
        "design": {
            "name": design.name,
            "version": design.version,
            "content_hash": design.content_hash,
        },
        "escalation_id": None,
        "decision": None,
        "resolved_at": None,
        "replies": [],
    }
    try:
        return Composed(verdict, parse_request(data), read)
    except RequestInvalid as exc:
        if prompt is not None:
            raise
        hint = " (asked from the situation's first sentence: give a prompt)"
        raise RequestInvalid(
            [f"{line}{hint}" if line.startswith("prompt:") else line for line in exc.problems]
        ) from None


def _needs_human(
    design: Design, situation: Situation, policy: str, configured: Collection[str]
) -> tuple[NeedsHuman, PolicyVerdict, TriggerType | None]:
    """The design's verdict, then the policy's where a clause decides (the safer first)."""
    verdict = decide_needs_human(design, situation)
    read = apply_policy(
        policy,
        situation.description,
        configured=configured,
        harm_risk=situation.trigger_type is TriggerType.HARM_RISK,
    )
    trigger = situation.trigger_type
    if read.needs_human is None or read.clause is None:
        return verdict, read, trigger
    rule = f"policy: {read.clause}"
    if read.needs_human:
        if trigger is None:  # the policy asks, the run named no trigger: say what it is
            irreversible = "irreversible" in read.clause.casefold()
            trigger = TriggerType.HARM_RISK if irreversible else TriggerType.UNCERTAIN
        reason = read.reason + (
            "" if verdict.needs_human else f" (the design alone: {verdict.reason})"
        )
        return NeedsHuman(True, reason, rule), read, trigger
    reason = read.reason + (
        f" (the design alone would ask: {verdict.reason})" if verdict.needs_human else ""
    )
    return NeedsHuman(False, reason, rule), read, trigger


def default_prompt(situation: Situation, options: Sequence[str]) -> str:
    """The question itself, when the run gave none: the choice between the options, asked
    about the situation's first sentence ("Mercury's Workday form shows a captcha: Solve
    captcha or Skip job?"); a question already is one."""
    about = first_sentence(situation.description).rstrip(".!")
    if about.endswith("?"):
        return about
    labels = [_option_from_text(text)["label"] for text in options or DEFAULT_OPTIONS]
    choice = " or ".join([", ".join(labels[:-1]), labels[-1]] if len(labels) > 1 else labels)
    asked = f"{about}: {choice}?"
    return asked if len(asked) <= PROMPT_MAX else f"{choice}?"


def first_sentence(text: str) -> str:
    """The text up to its first sentence end (. ! ?), on one line."""
    flat = " ".join(text.split())
    return re.split(r"(?<=[.!?])\s+", flat, maxsplit=1)[0]


def _option_from_text(text: str) -> dict[str, str]:
    """'Label=value' (value defaults to the label) as an option object."""
    label, sep, value = text.partition("=")
    return {"label": label.strip(), "value": value.strip() if sep else label.strip()}


def packet_for(
    request: Request, design: Design, *, run_id: str, request_path: str
) -> dict[str, Any]:
    """The escalation packet (SPEC §1) that files a request with the service."""
    tier = design.tier(request.severity)
    evidence = [{"kind": "artifact", "ref": request_path}]
    evidence += [
        {"kind": "link" if "://" in ref else "artifact", "ref": ref} for ref in request.context_refs
    ]
    choices = " | ".join(option.label for option in request.options)
    return {
        "packet_id": f"req-{request.id}",
        "run_id": run_id,
        "task_summary": first_sentence(request.situation),
        "severity": request.severity.value,
        "trigger_type": request.trigger_type.value,
        "trigger_detail": request.needs_human["reason"],
        "attempted": ["composed a request file"],
        "evidence": evidence,
        "completed": [],
        "remaining": [request.prompt],
        "blocked_on": request.prompt,
        "requested_action": request.prompt,
        "recipient": tier.recipient.primary,
        "waiting_behavior": tier.waiting_behavior.value,
        "resume_condition": f"a deciding reply to request {request.id}, one of: {choices}",
    }


def resolve(
    request: Request, reply_text: str, *, now: datetime, destructive: Collection[str] = ()
) -> Resolution:
    """Read a reply: the first deciding one resolves; any other is recorded and decides nothing."""
    secrets = find_secrets(reply_text, path="reply")
    if secrets:
        kinds = ", ".join(dict.fromkeys(f.kind for f in secrets))
        raise RequestInvalid([f"reply: contains a secret ({kinds}); nothing was recorded"])

    def record(outcome: str, match: ReplyMatch | None) -> tuple[Mapping[str, Any], ...]:
        kind, reason = (match.kind, match.reason) if match else (None, "superseded")
        entry = {"at": now.isoformat(), "raw_reply": reply_text, "kind": kind, "reason": reason}
        return (*request.replies, {**entry, "outcome": outcome})

    if request.status is not RequestStatus.OPEN:
        decided = f" ({request.decision['option']})" if request.decision else ""
        note = (
            f"request {request.id} is already {request.status.value}{decided}: "
            "this reply is recorded as superseded and decides nothing"
        )
        return Resolution(replace(request, replies=record("superseded", None)), False, note)
    options = [Option(o.label, o.value) for o in request.options]
    match = parse_reply(reply_text, options, destructive=destructive)
    if not match.decides or match.option is None:
        note = f"request {request.id} stays open: {clarification(options, match=match)}"
        return Resolution(replace(request, replies=record("recorded", match)), False, note, match)
    decision = {
        "request_id": request.id,
        "option": match.option.label,
        "value": match.option.value,
        "matched_by": match.matched_by or "exact",
        "raw_reply": reply_text,
    }
    resolved = replace(
        request,
        status=RequestStatus.RESOLVED,
        decision=decision,
        resolved_at=now,
        replies=record("decided", match),
    )
    note = f"request {request.id} resolved: {match.option.label} ({match.option.value})"
    return Resolution(resolved, True, note, match)


def settle_from_case(
    request: Request, close: Mapping[str, Any], *, now: datetime
) -> Request | None:
    """The request file after its escalation closed elsewhere (dashboard, channel, link, API,
    timeout): resolved with the decision, or expired when the timeout default applied; None
    when the file has nothing to change (already settled, or the case decided none of its
    options)."""
    if request.status is not RequestStatus.OPEN:
        return None
    if close.get("is_default"):
        return replace(request, status=RequestStatus.EXPIRED)
    chosen = next((o for o in request.options if o.label == close.get("option")), None)
    if close.get("outcome") not in ("decided", "reconcile_first") or chosen is None:
        return None
    by = f"{close.get('decided_by') or 'someone'} via {close.get('channel') or 'the service'}"
    decision = {
        "request_id": request.id,
        "option": chosen.label,
        "value": chosen.value,
        "matched_by": "escalation",
        "raw_reply": f"decided on escalation {request.escalation_id} by {by}",
    }
    return replace(request, status=RequestStatus.RESOLVED, decision=decision, resolved_at=now)
