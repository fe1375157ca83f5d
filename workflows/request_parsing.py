"""Read a request object (SPEC §7): its shape by the schema in workflows/request_shape.py,
its errors said again in the SPEC's fixed lines, then the rules that tie fields together and
the secrets scan."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic_core import ValidationError

from workflows.errors import RequestInvalid
from workflows.request_schema import (
    EXTRA_KEY,
    FIELDS,
    OPTIONS_MAX,
    REPLY_FIELDS,
    Request,
    RequestOption,
    RequestStatus,
    TimeoutDefault,
)
from workflows.request_shape import LIMIT, VALIDATOR
from workflows.secrets import find_secrets
from workflows.vocabulary import Severity, TimeoutAction, TriggerType

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

# What pydantic says of a record's keys, in the SPEC's words and order (missing, then unknown).
_FIELD_FAULTS = {"missing": "missing", "extra_forbidden": "unknown field"}
_ORDER = {"missing": 0, "extra_forbidden": 1}
_RANK = {name: place for place, name in enumerate(FIELDS)}
_LISTS = ("context_refs", "replies")


def parse_request(data: object) -> Request:
    """Check a request object field by field; raise RequestInvalid naming each field and limit."""
    if not isinstance(data, Mapping):
        raise RequestInvalid(["request: must be a JSON object"])
    data = _flattened(data)
    checked, p = _checked_shape(data)
    p += _consistency(data, failed={_field_of(line) for line in p})
    # Scanned as read: the texts JobClaw wrote, each ref that is text, each reply's raw words.
    refs, replies = (data[key] if isinstance(data[key], list) else [] for key in _LISTS)
    scanned = {key: data[key] for key in ("situation", "policy", "prompt", "options")}
    scanned.update(
        context_refs=[ref if isinstance(ref, str) else "" for ref in refs],
        replies=[r["raw_reply"] for r in replies if _is_reply(r)],
    )
    p += [f"{f.field}: contains a secret ({f.kind})" for f in find_secrets(scanned)]
    if p or checked is None:
        raise RequestInvalid(p)
    timeout = checked["timeout_default"]
    return Request(
        id=checked["request_id"],
        created_at=datetime.fromisoformat(checked["created_at"]),
        situation=checked["situation"],
        policy=checked["policy"],
        prompt=checked["prompt"],
        options=tuple(RequestOption(o["label"], o["value"]) for o in checked["options"]),
        timeout_default=TimeoutDefault(timeout["after_minutes"], TimeoutAction(timeout["action"])),
        context_refs=tuple(checked["context_refs"]),
        status=RequestStatus(checked["status"]),
        trigger_type=TriggerType(checked["trigger_type"]),
        severity=Severity(checked["severity"]),
        needs_human=checked["needs_human"],
        design=checked["design"],
        escalation_id=checked["escalation_id"],
        decision=checked["decision"],
        resolved_at=(
            datetime.fromisoformat(checked["resolved_at"]) if checked["resolved_at"] else None
        ),
        replies=tuple(checked["replies"]),
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


def _is_reply(entry: object) -> bool:
    return isinstance(entry, Mapping) and set(entry) == set(REPLY_FIELDS)


def _consistency(data: Mapping[str, Any], *, failed: Collection[str]) -> list[str]:
    """Rules that tie fields together: harm_risk aborts, only a resolved request has a decision.
    Each is judged on the fields it reads that are themselves well formed (not in `failed`)."""
    p: list[str] = []
    timeout = data["timeout_default"]
    if (
        not {"trigger_type", "timeout_default"} & set(failed)
        and data["trigger_type"] == TriggerType.HARM_RISK
        and timeout["action"] != TimeoutAction.ABORT
    ):
        p.append(
            "timeout_default.action: harm_risk steps are irreversible, so the timeout default "
            f"must be abort (SPEC §2), got {timeout['action']!r}"
        )
    status = None if "status" in failed else RequestStatus(data["status"])
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
        labels = _option_labels(data["options"])
        if labels and decision.get("option") not in labels:
            p.append(f"decision.option: {decision.get('option')!r} is not one of {labels}")
    return p


def _checked_shape(flat: Mapping[str, Any]) -> tuple[dict[str, Any] | None, list[str]]:
    """The checked fields (texts stripped), or None and each shape problem in FIELDS order;
    RequestInvalid when fields are missing or unknown, as nothing else is judged then."""
    try:
        checked: dict[str, Any] = VALIDATOR.validate_python(flat)
    except ValidationError as invalid:
        errors = invalid.errors(include_url=False)
    else:
        errors = []
    fields = [e for e in errors if len(e["loc"]) == 1 and e["type"] in _FIELD_FAULTS]
    if fields:
        raise RequestInvalid([line for error in fields for line in _lines(error)])
    # A record's LIMIT refusals are said once its fields are all there and typed; its missing
    # fields are named before its unknown ones, then the rest (pydantic reports one record's
    # errors together: its fields in order, extras last).
    unfit = {e["loc"][:-1] for e in errors if e["type"] != LIMIT}
    first: dict[tuple[int | str, ...], int] = {}
    for place, error in enumerate(errors):
        first.setdefault(error["loc"][:-1], place)
    errors.sort(key=lambda e: (first[e["loc"][:-1]], _ORDER.get(e["type"], 2)))
    lines = [
        line
        for error in errors
        if not (error["type"] == LIMIT and len(error["loc"]) > 1 and error["loc"][:-1] in unfit)
        for line in _lines(error)
    ]
    options = flat["options"] if isinstance(flat["options"], list) else None
    if options is not None and not 1 <= len(options) <= OPTIONS_MAX:
        lines.insert(0, f"options: {len(options)} given, 1 to {OPTIONS_MAX} allowed")
    labels = [label.casefold() for label in _option_labels(options)]
    if len(set(labels)) != len(labels):
        lines.append("options: two options share a label (labels ignore case)")
    lines.sort(key=lambda line: _RANK.get(_field_of(line), len(_RANK)))  # stable: in place
    return (None if lines else checked), lines


def _lines(error: ErrorDetails) -> list[str]:
    path = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"])
    path = path.removeprefix(".")
    if error["type"] in _FIELD_FAULTS:
        return [f"{path}: {_FIELD_FAULTS[error['type']]}"]
    said = error.get("ctx", {}).get("lines") or [error["msg"]]
    return [f"{path}: {line}" for line in said]


def _field_of(line: str) -> str:
    """The top-level field a problem line is about."""
    return line.split(":", 1)[0].split(".", 1)[0].split("[", 1)[0]


def _option_labels(options: object) -> list[str]:
    """The stripped labels of the options whose label and value are both non-blank text."""
    if not isinstance(options, list):
        return []
    return [
        entry["label"].strip()
        for entry in options
        if isinstance(entry, Mapping)
        and set(entry) == {"label", "value"}
        and all(isinstance(entry[key], str) and entry[key].strip() for key in entry)
    ]
