"""Request files (SPEC §7): the schema of requests/<id>.json, its limits, composing, resolving."""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeVar

from workflows.case import Option
from workflows.errors import PermanentError
from workflows.needs_human import NeedsHuman, Situation, decide_needs_human
from workflows.replies import ReplyMatch, clarification, parse_reply
from workflows.secrets import find_secrets
from workflows.vocabulary import Severity, TimeoutAction, TriggerType

if TYPE_CHECKING:  # the design is a pydantic model; this module only reads it
    from models.design import Design

_E = TypeVar("_E", bound=StrEnum)

# The mobile prompt form (SPEC §4): limits are refused with an error, never truncated.
PROMPT_MAX = 120
OPTIONS_MAX = 3
LABEL_MAX = 24
REQUEST_ID = re.compile(r"[0-9a-f]{12}")
DEFAULT_OPTIONS = ("Approve=approve", "Deny=deny")
# Severity of a filed request by trigger; any other trigger files as medium.
TRIGGER_SEVERITY = {TriggerType.HARM_RISK: Severity.HIGH, TriggerType.COST_RISK: Severity.HIGH}

# "Verb-led" (SPEC §4) without a dictionary: the label's first word must be on this list of
# imperatives an operator is asked to choose between. A first word ending in -ing or -ed
# ("Retrying", "Approved") is refused by name as a participle unless listed ("Proceed").
# Predictable beats clever here: a missing verb is one line to add, a false pass is a bad button.
_VERB_LIST = (
    "abort accept add allow approve archive ask back block bring buy bump call cancel change "
    "check choose clean clear close commit confirm continue copy create decline defer delete "
    "deny deploy disable discard do downgrade drop edit email enable escalate extend fail fetch "
    "fix flag force freeze give grant halt hold ignore increase install keep kill leave limit "
    "lock lower mark merge migrate move notify open override page patch pause pay pick pin "
    "postpone proceed publish pull purge push queue raise rebase rebuild reboot redo redeploy "
    "refund reject release reload remove rename reopen repair replace report request rerun reset "
    "restart restore resume retry return revert review revoke roll rotate run save scale select "
    "send set ship skip snooze split start stop switch take tell test trust try undo unlock "
    "update upgrade use verify wait wipe"
)
VERBS = frozenset(_VERB_LIST.split())


class RequestStatus(StrEnum):
    OPEN = "open"
    RESOLVED = "resolved"
    EXPIRED = "expired"


class RequestInvalid(PermanentError):
    """A request (composed or read back) breaks its schema; one line per problem."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("request invalid: " + "; ".join(self.problems))


FIELDS = (
    "id",
    "created_at",
    "situation",
    "policy",
    "prompt",
    "options",
    "timeout_default",
    "context_refs",
    "status",
    "trigger_type",
    "severity",
    "needs_human",
    "design",
    "escalation_id",
    "decision",
    "resolved_at",
    "replies",
)
DECISION_FIELDS = ("request_id", "option", "value", "matched_by", "raw_reply")
REPLY_FIELDS = ("at", "raw_reply", "kind", "reason", "outcome")
REPLY_OUTCOMES = ("decided", "recorded", "superseded")


@dataclass(frozen=True)
class RequestOption:
    """One button: a verb-led label and the value the run receives."""

    label: str
    value: str


@dataclass(frozen=True)
class TimeoutDefault:
    """What happens when nobody answers within `after_minutes`."""

    after_minutes: int
    action: TimeoutAction


@dataclass(frozen=True, kw_only=True)
class Request:
    """One request file, checked: build with compose() or parse_request(), write with to_dict()."""

    id: str
    created_at: datetime
    situation: str
    policy: str
    prompt: str
    options: tuple[RequestOption, ...]
    timeout_default: TimeoutDefault
    context_refs: tuple[str, ...]
    status: RequestStatus
    trigger_type: TriggerType
    severity: Severity
    needs_human: Mapping[str, str]  # {reason, rule} from compose mode
    design: Mapping[str, Any]  # {name, version, content_hash}: the design that decided
    escalation_id: str | None = None
    decision: Mapping[str, Any] | None = None
    resolved_at: datetime | None = None
    replies: tuple[Mapping[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The request as written to requests/<id>.json (examples/request.schema.json)."""
        return {
            "id": self.id,
            "created_at": self.created_at.isoformat(),
            "situation": self.situation,
            "policy": self.policy,
            "prompt": self.prompt,
            "options": [{"label": o.label, "value": o.value} for o in self.options],
            "timeout_default": {
                "after_minutes": self.timeout_default.after_minutes,
                "action": self.timeout_default.action.value,
            },
            "context_refs": list(self.context_refs),
            "status": self.status.value,
            "trigger_type": self.trigger_type.value,
            "severity": self.severity.value,
            "needs_human": dict(self.needs_human),
            "design": dict(self.design),
            "escalation_id": self.escalation_id,
            "decision": dict(self.decision) if self.decision is not None else None,
            "resolved_at": self.resolved_at.isoformat() if self.resolved_at else None,
            "replies": [dict(reply) for reply in self.replies],
        }


@dataclass(frozen=True)
class Composed:
    """Compose mode's answer: the needs-human verdict and, only when true, the request."""

    verdict: NeedsHuman
    request: Request | None


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
) -> Composed:
    """Decide needs-human; when true, build the checked request. Raises RequestInvalid."""
    verdict = decide_needs_human(design, situation)
    if not verdict.needs_human or situation.trigger_type is None:
        return Composed(verdict, None)
    trigger = situation.trigger_type
    severity = TRIGGER_SEVERITY.get(trigger, Severity.MEDIUM)
    tier_minutes = math.ceil(design.tier(severity).timeout.total_seconds() / 60)
    data = {
        "id": request_id,
        "created_at": now.isoformat(),
        "situation": situation.description,
        "policy": policy.strip(),
        "prompt": (prompt if prompt is not None else first_sentence(situation.description)),
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
        return Composed(verdict, parse_request(data))
    except RequestInvalid as exc:
        if prompt is not None:
            raise
        hint = " (taken from the situation's first sentence: give a prompt)"
        raise RequestInvalid(
            [f"{line}{hint}" if line.startswith("prompt:") else line for line in exc.problems]
        ) from None


def first_sentence(text: str) -> str:
    """The text up to its first sentence end (. ! ?), on one line."""
    flat = " ".join(text.split())
    return re.split(r"(?<=[.!?])\s+", flat, maxsplit=1)[0]


def _option_from_text(text: str) -> dict[str, str]:
    """'Label=value' (value defaults to the label) as an option object."""
    label, sep, value = text.partition("=")
    return {"label": label.strip(), "value": value.strip() if sep else label.strip()}


def parse_request(data: object) -> Request:
    """Check a request object field by field; raise RequestInvalid naming each field and limit."""
    if not isinstance(data, Mapping):
        raise RequestInvalid(["request: must be a JSON object"])
    problems = [f"{key}: missing" for key in FIELDS if key not in data]
    problems += [f"{key}: unknown field" for key in data if key not in FIELDS]
    if problems:
        raise RequestInvalid(problems)
    p: list[str] = []
    request_id = _text(data["id"], "id", p)
    if request_id and not REQUEST_ID.fullmatch(request_id):
        p.append(f"id: {request_id!r} is not 12 lowercase hex characters")
    created_at = _time(data["created_at"], "created_at", p)
    situation = _text(data["situation"], "situation", p)
    policy = _text(data["policy"], "policy", p)
    prompt = _text(data["prompt"], "prompt", p, limit=PROMPT_MAX, one_line=True)
    options = _options(data["options"], p)
    timeout = _timeout(data["timeout_default"], p)
    refs = _texts(data["context_refs"], "context_refs", p)
    status = _enum(data["status"], "status", RequestStatus, p)
    trigger = _enum(data["trigger_type"], "trigger_type", TriggerType, p)
    severity = _enum(data["severity"], "severity", Severity, p)
    verdict = _record(data["needs_human"], "needs_human", {"reason": str, "rule": str}, p)
    design = _record(
        data["design"], "design", {"name": str, "version": int, "content_hash": str}, p
    )
    escalation_id = data["escalation_id"]
    if escalation_id is not None and not (isinstance(escalation_id, str) and escalation_id.strip()):
        p.append("escalation_id: must be non-empty text or null")
    decision = data["decision"]
    if decision is not None:
        decision = _record(decision, "decision", dict.fromkeys(DECISION_FIELDS, str), p)
    resolved_at = data["resolved_at"]
    if resolved_at is not None:
        resolved_at = _time(resolved_at, "resolved_at", p)
    replies = _replies(data["replies"], p)
    p += _consistency(data, trigger, timeout, status, options)
    scanned = {key: data[key] for key in ("situation", "policy", "prompt", "options")}
    scanned.update(context_refs=list(refs), replies=[r["raw_reply"] for r in replies])
    p += [f"{f.field}: contains a secret ({f.kind})" for f in find_secrets(scanned)]
    if p:
        raise RequestInvalid(p)
    # Every helper that returns None has reported a problem, so these hold past `if p`.
    assert created_at and timeout and status and trigger and severity and verdict and design
    return Request(
        id=request_id,
        created_at=created_at,
        situation=situation,
        policy=policy,
        prompt=prompt,
        options=options,
        timeout_default=timeout,
        context_refs=refs,
        status=status,
        trigger_type=trigger,
        severity=severity,
        needs_human=verdict,
        design=design,
        escalation_id=escalation_id,
        decision=decision,
        resolved_at=resolved_at,
        replies=replies,
    )


def _consistency(
    data: Mapping[str, Any],
    trigger: TriggerType | None,
    timeout: TimeoutDefault | None,
    status: RequestStatus | None,
    options: Sequence[RequestOption],
) -> list[str]:
    """Rules that tie fields together: harm_risk aborts, only a resolved request has a decision."""
    p: list[str] = []
    if trigger is TriggerType.HARM_RISK and timeout and timeout.action is not TimeoutAction.ABORT:
        p.append(
            "timeout_default.action: harm_risk steps are irreversible, so the timeout default "
            f"must be abort (SPEC §2), got {timeout.action.value!r}"
        )
    decision, resolved_at = data["decision"], data["resolved_at"]
    if status is RequestStatus.RESOLVED and (decision is None or resolved_at is None):
        p.append("decision: a resolved request must carry its decision and resolved_at")
    if status in (RequestStatus.OPEN, RequestStatus.EXPIRED) and (decision or resolved_at):
        p.append(f"decision: a request that is {status} carries no decision or resolved_at")
    if isinstance(decision, Mapping):
        if decision.get("request_id") != data["id"]:
            p.append(
                f"decision.request_id: {decision.get('request_id')!r} is not this request's id"
            )
        labels = [o.label for o in options]
        if options and decision.get("option") not in labels:
            p.append(f"decision.option: {decision.get('option')!r} is not one of {labels}")
    return p


def _text(
    value: object, path: str, p: list[str], *, limit: int | None = None, one_line: bool = False
) -> str:
    """Non-blank text within `limit` characters; a problem line otherwise."""
    if not isinstance(value, str) or not value.strip():
        p.append(f"{path}: must be non-empty text")
        return ""
    text = value.strip()
    if one_line and any(not ch.isprintable() for ch in text):
        p.append(f"{path}: must be one line of printable text")
    if limit is not None and len(text) > limit:
        p.append(f"{path}: {len(text)} characters, at most {limit} (shorten it; it is not cut)")
    return text


def _texts(value: object, path: str, p: list[str]) -> tuple[str, ...]:
    if not isinstance(value, list):
        p.append(f"{path}: must be a list of text")
        return ()
    return tuple(_text(item, f"{path}[{i}]", p, one_line=True) for i, item in enumerate(value))


def _time(value: object, path: str, p: list[str]) -> datetime | None:
    """An ISO 8601 time with its UTC offset."""
    try:
        moment = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        p.append(f"{path}: must be an ISO 8601 time with a UTC offset, got {value!r}")
        return None
    return moment


def _enum(value: object, path: str, kind: type[_E], p: list[str]) -> _E | None:
    if isinstance(value, str) and value in {member.value for member in kind}:
        return kind(value)
    p.append(f"{path}: {value!r} is not one of {', '.join(m.value for m in kind)}")
    return None


def _record(
    value: object, path: str, shape: Mapping[str, type], p: list[str]
) -> dict[str, Any] | None:
    """An object with exactly these keys, each of its type (bool is not an int here)."""
    if not isinstance(value, Mapping):
        p.append(f"{path}: must be an object with {', '.join(shape)}")
        return None
    bad = [f"{path}.{key}: missing" for key in shape if key not in value]
    bad += [f"{path}.{key}: unknown field" for key in value if key not in shape]
    for key, kind in shape.items():
        item = value.get(key)
        if key not in value:
            continue
        if kind is int and (not isinstance(item, int) or isinstance(item, bool)):
            bad.append(f"{path}.{key}: must be a whole number")
        elif kind is str and not (isinstance(item, str) and item.strip()):
            bad.append(f"{path}.{key}: must be non-empty text")
    p += bad
    return None if bad else dict(value)


def _options(value: object, p: list[str]) -> tuple[RequestOption, ...]:
    """1 to 3 options, each {label: verb-led, at most 24 characters; value}; labels distinct."""
    if not isinstance(value, list):
        p.append("options: must be a list of {label, value}")
        return ()
    if not 1 <= len(value) <= OPTIONS_MAX:
        p.append(f"options: {len(value)} given, 1 to {OPTIONS_MAX} allowed")
    found: list[RequestOption] = []
    for i, entry in enumerate(value):
        option = _record(entry, f"options[{i}]", {"label": str, "value": str}, p)
        if option is None:
            continue
        label = _text(option["label"], f"options[{i}].label", p, limit=LABEL_MAX, one_line=True)
        problem = _verb_problem(label)
        if label and problem:
            p.append(f"options[{i}].label: {problem}")
        found.append(RequestOption(label, _text(option["value"], f"options[{i}].value", p)))
    labels = [o.label.casefold() for o in found]
    if len(set(labels)) != len(labels):
        p.append("options: two options share a label (labels ignore case)")
    return tuple(found)


def _verb_problem(label: str) -> str | None:
    """Why a label is not verb-led, or None (see VERBS)."""
    match = re.match(r"[^\W\d_]+", label)
    word = match.group(0).casefold() if match else ""
    if word in VERBS:
        return None
    if word.endswith(("ing", "ed")):
        return f"{label!r} must lead with an imperative verb, not {word!r} (no -ing/-ed forms)"
    return (
        f"{label!r} must lead with a verb: {word or label!r} is not on the verb list "
        "(e.g. Approve, Deny, Retry, Skip, Use, Keep; VERBS in workflows/requests.py)"
    )


def _timeout(value: object, p: list[str]) -> TimeoutDefault | None:
    shape = {"after_minutes": int, "action": str}
    record = _record(value, "timeout_default", shape, p)
    if record is None:
        return None
    action = _enum(record["action"], "timeout_default.action", TimeoutAction, p)
    if record["after_minutes"] <= 0:
        p.append(
            f"timeout_default.after_minutes: must be more than 0, got {record['after_minutes']}"
        )
        return None
    return TimeoutDefault(record["after_minutes"], action) if action else None


def _replies(value: object, p: list[str]) -> tuple[dict[str, Any], ...]:
    """Every reply read so far: {at, raw_reply, kind, reason, outcome}."""
    if not isinstance(value, list):
        p.append("replies: must be a list")
        return ()
    found = []
    for i, entry in enumerate(value):
        path = f"replies[{i}]"
        if not isinstance(entry, Mapping) or set(entry) != set(REPLY_FIELDS):
            p.append(f"{path}: must be an object with {', '.join(REPLY_FIELDS)}")
            continue
        _time(entry["at"], f"{path}.at", p)
        if not isinstance(entry["raw_reply"], str):
            p.append(f"{path}.raw_reply: must be text")
        for key in ("kind", "reason"):
            if entry[key] is not None and not isinstance(entry[key], str):
                p.append(f"{path}.{key}: must be text or null")
        if entry["outcome"] not in REPLY_OUTCOMES:
            p.append(
                f"{path}.outcome: {entry['outcome']!r} is not one of {', '.join(REPLY_OUTCOMES)}"
            )
        found.append(dict(entry))
    return tuple(found)


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
