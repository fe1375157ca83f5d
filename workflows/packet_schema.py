"""The escalation packet's shape, one pydantic schema for the checks, intake and the API (SPEC §1).

Written with pydantic-core alone: `escalate check` runs on every pass of a shell loop, and the
pydantic package would triple its start (bench/check_cli.py). pydantic turns the same schema
into the API's JSON Schema (models/packet.py). What pydantic reports is said again in the
SPEC's fixed lines by `problems_of`, which scripts written against the reference checker read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

from pydantic_core import PydanticCustomError, SchemaValidator, ValidationError

from workflows.vocabulary import (
    REQUIRED_STRINGS,
    EvidenceKind,
    Severity,
    TriggerType,
    WaitingBehavior,
)

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails
    from pydantic_core.core_schema import CoreSchema

ENUMS: dict[str, type[StrEnum]] = {
    "severity": Severity,
    "trigger_type": TriggerType,
    "waiting_behavior": WaitingBehavior,
}
TEXT_LISTS = ("attempted", "completed", "remaining")
# What a packet raised through intake may leave to its severity's tier in the design.
DESIGN_FILLED = ("recipient", "waiting_behavior")
# The SPEC's order of errors: required strings, the enums, the lists, evidence (the fields'
# own order, the SPEC's table, is the order the API documents them in).
ERROR_ORDER = (*REQUIRED_STRINGS, *ENUMS, *TEXT_LISTS, "evidence")

DESCRIPTIONS = {
    "packet_id": "stable id, unique within the run",
    "run_id": "the run that asks",
    "task_summary": "the task and its goal",
    "trigger_detail": "the concrete facts that fired it",
    "attempted": "what was tried, in order (at least one)",
    "evidence": "where the figures in trigger_detail come from (at least one)",
    "completed": "parts done and verified",
    "remaining": "parts still to do, the blocked part included",
    "blocked_on": "the single point the run is stopped on",
    "requested_action": "the decision needed, one line",
    "recipient": "who decides; through intake, default: the tier's primary",
    "waiting_behavior": (
        "how the run waits (critical: paused or stopped); through intake, default: the tier's"
    ),
    "resume_condition": "an observable event",
}


def _not_blank(value: str) -> str:
    # str.strip(), as the reference checker judges blank text (no-break spaces included).
    if not value.strip():
        raise PydanticCustomError("blank", "must not be blank")
    return value


# The schema is written as pydantic-core's plain dicts, not with its core_schema helpers:
# importing those is a fifth of `escalate check`'s start (api/check_cli.py loads only the
# compiled validator).
def _described(schema: dict[str, Any], description: str | None) -> Any:
    if description:
        schema["metadata"] = {"pydantic_js_updates": {"description": description}}
    return schema


def _text(description: str | None = None) -> CoreSchema:
    text = {"type": "str", "strict": True, "min_length": 1}
    check = {"type": "no-info", "function": _not_blank}
    schema: CoreSchema = _described(
        {"type": "function-after", "function": check, "schema": text}, description
    )
    return schema


def _enum(vocabulary: type[StrEnum]) -> CoreSchema:
    # Literal values, not the enum: a check compares text, as JSON carries it. Named like
    # the enum, the API documents it as the same component the other models use.
    name = vocabulary.__name__
    return {
        "type": "literal",
        "expected": [member.value for member in vocabulary],
        "ref": name,
        "metadata": {"pydantic_js_updates": {"title": name}},
    }


def _list(items: CoreSchema, *, min_length: int = 0) -> CoreSchema:
    shape: dict[str, Any] = {"type": "list", "items_schema": items, "strict": True}
    if min_length:
        shape["min_length"] = min_length
    return shape  # type: ignore[return-value]


def _record(
    fields: dict[str, Any], name: str, description: str, *, extra: Literal["allow", "ignore"]
) -> CoreSchema:
    return {
        "type": "typed-dict",
        "fields": fields,
        "strict": True,
        "extra_behavior": extra,
        "ref": name,
        "cls_name": name,
        "metadata": {"pydantic_js_updates": {"title": name, "description": description}},
    }


def _field(schema: CoreSchema, *, required: bool = True, description: str | None = None) -> Any:
    return _described(
        {"type": "typed-dict-field", "schema": schema, "required": required}, description
    )


def _evidence() -> CoreSchema:
    entry = _record(
        {
            "kind": _field(_enum(EvidenceKind)),
            "ref": _field(_text("a link, artifact path, test id or log path")),
        },
        "Evidence",
        "A reference the figures in trigger_detail come from.",
        extra="ignore",
    )
    return _list(entry, min_length=1)


def field_shapes() -> dict[str, CoreSchema]:
    """Each packet field's own schema, in the SPEC's order (the one list of packet fields)."""
    return {
        "packet_id": _text(),
        "run_id": _text(),
        "task_summary": _text(),
        "severity": _enum(Severity),
        "trigger_type": _enum(TriggerType),
        "trigger_detail": _text(),
        "attempted": _list(_text(), min_length=1),
        "evidence": _evidence(),
        "completed": _list(_text()),
        "remaining": _list(_text()),
        "blocked_on": _text(),
        "requested_action": _text(),
        "recipient": _text(),
        "waiting_behavior": _enum(WaitingBehavior),
        "resume_condition": _text(),
    }


def packet_schema(*, design_filled: bool = False) -> CoreSchema:
    """The packet's core schema; `design_filled`: recipient and waiting_behavior may be absent
    or null, as intake takes them (the design's tier fills them before the checks)."""
    shapes = field_shapes()
    fields = {}
    for name, shape in shapes.items():
        optional = design_filled and name in DESIGN_FILLED
        fields[name] = _field(
            {"type": "nullable", "schema": shape} if optional else shape,
            required=not optional,
            description=DESCRIPTIONS.get(name),
        )
    name = "Packet" if design_filled else "CheckedPacket"
    about = "One escalation: one recipient, one requested decision (SPEC §1)."
    return _record(fields, name, about, extra="allow")


_VALIDATOR = SchemaValidator(packet_schema())


@dataclass(frozen=True)
class Problem:
    """One error in the SPEC's words: its field ("" for the packet itself) and what is wrong."""

    field: str
    message: str
    entry: int | None = None  # the list entry it is about, for the counts of valid entries

    def line(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


def problems_of(packet: object) -> list[Problem]:
    """Every shape error of a decoded packet, in the SPEC's order and words (SPEC §1)."""
    try:
        _VALIDATOR.validate_python(packet)
    except ValidationError as invalid:
        faults = [_fault(error, packet) for error in invalid.errors(include_url=False)]
    else:
        return []
    # An evidence entry is judged by its first fault, as the reference checker does: a bad
    # kind hides a blank ref (scripts count the errors, #15.6).
    seen: set[tuple[str, int | None]] = set()
    kept = []
    for fault in faults:
        key = (fault.field, fault.entry)
        if fault.entry is not None and key in seen:
            continue
        seen.add(key)
        kept.append(fault)
    rank = {name: place for place, name in enumerate(ERROR_ORDER)}
    return sorted(kept, key=lambda fault: rank.get(fault.field, -1))


def _fault(error: ErrorDetails, packet: object) -> Problem:
    loc, kind = error["loc"], error["type"]
    if not loc:
        return Problem("", "packet is not a JSON object")
    name = str(loc[0])
    if name in ENUMS:
        value = packet.get(name) if isinstance(packet, Mapping) else None
        return Problem(name, f"bad value {value!r}")
    if name == "evidence":
        if len(loc) == 1:
            return Problem(name, "missing, not a list, or empty")
        entry = int(loc[1])
        if len(loc) == 2:
            return Problem(name, "entry is not an object", entry)
        if loc[2] == "kind":
            kind_value = error["input"] if kind != "missing" else None
            return Problem(name, f"bad kind {kind_value!r}", entry)
        return Problem(name, "ref is empty", entry)
    if name in TEXT_LISTS:
        if len(loc) == 1:
            empty = kind == "too_short"
            return Problem(name, "empty list" if empty else "missing or not a list")
        return Problem(name, "entry is empty or not a string", int(loc[1]))
    return Problem(name, "missing or empty")
