"""Check a request object field by field against its schema and limits (SPEC §7)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any, TypeVar

from workflows.errors import RequestInvalid
from workflows.request_schema import (
    DECISION_FIELDS,
    EXTRA_KEY,
    FIELDS,
    LABEL_MAX,
    OPTIONS_MAX,
    PROMPT_MAX,
    REPLY_FIELDS,
    REPLY_OUTCOMES,
    REQUEST_ID,
    VERBS,
    Request,
    RequestOption,
    RequestStatus,
    TimeoutDefault,
)
from workflows.secrets import find_secrets
from workflows.vocabulary import Severity, TimeoutAction, TriggerType

_E = TypeVar("_E", bound=StrEnum)


def parse_request(data: object) -> Request:
    """Check a request object field by field; raise RequestInvalid naming each field and limit."""
    if not isinstance(data, Mapping):
        raise RequestInvalid(["request: must be a JSON object"])
    data = _flattened(data)
    problems = [f"{key}: missing" for key in FIELDS if key not in data]
    problems += [f"{key}: unknown field" for key in data if key not in FIELDS]
    if problems:
        raise RequestInvalid(problems)
    p: list[str] = []
    request_id = _text(data["request_id"], "request_id", p)
    if request_id and not REQUEST_ID.fullmatch(request_id):
        p.append(f"request_id: {request_id!r} is not 12 lowercase hex characters")
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


def _flattened(data: Mapping[str, Any]) -> dict[str, Any]:
    """JobClaw's fields with this service's (under "escalate") beside them; a file written
    before the split (flat, its id under "id") reads the same."""
    flat = {key: value for key, value in data.items() if key != EXTRA_KEY}
    extra = data.get(EXTRA_KEY)
    if isinstance(extra, Mapping):
        clashing = set(extra) & set(flat)
        flat.update({key: value for key, value in extra.items() if key not in clashing})
        flat.update({f"{EXTRA_KEY}.{key}": extra[key] for key in clashing})  # named unknown
    elif EXTRA_KEY in data:
        flat[EXTRA_KEY] = extra  # reported as an unknown field: it must be an object
    if "id" in flat and "request_id" not in flat:
        flat["request_id"] = flat.pop("id")
    return flat


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
        if decision.get("request_id") != data["request_id"]:
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
        "(e.g. Approve, Deny, Retry, Skip, Use, Keep; VERBS in workflows/request_schema.py)"
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
