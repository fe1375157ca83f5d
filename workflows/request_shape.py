"""The request file's shape (SPEC §7), one pydantic-core schema for parse_request and the
published JSON Schema (examples/request.schema.json, written by api/request_schema_file.py).

Each leaf is a small check that words its own refusal in the SPEC's lines (scripts and tests
read them), and documents itself to JSON Schema by the plain schema it stands for. A LIMIT
refusal inside a record (a label too long, an unknown timeout action) is only to be said once
the record's fields are all present and typed (workflows/request_parsing.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pydantic_core import PydanticCustomError, SchemaValidator, ValidationError

from workflows.request_schema import (
    DECISION_FIELDS,
    EXTRA_FIELDS,
    EXTRA_KEY,
    LABEL_MAX,
    OPTIONS_MAX,
    PROMPT_MAX,
    REPLY_OUTCOMES,
    REQUEST_ID,
    SEED_FIELDS,
    RequestStatus,
    verb_problem,
)
from workflows.vocabulary import Severity, TimeoutAction, TriggerType

if TYPE_CHECKING:
    from pydantic_core.core_schema import CoreSchema

CONTENT_HASH = re.compile(r"[0-9a-f]{64}")
_SHAPE, LIMIT = "request_shape", "request_limit"  # the two kinds of refusal, see above


def _refused(kind: str, *lines: str) -> PydanticCustomError:
    return PydanticCustomError(kind, "{lines}", {"lines": list(lines)})


def _leaf(
    check: Callable[[Any], Any], documented: Mapping[str, Any], description: str | None = None
) -> CoreSchema:
    """A check raising the SPEC's lines, documented as the plain schema `documented`."""
    if description:
        documented = {
            **documented,
            "metadata": {"pydantic_js_updates": {"description": description}},
        }
    schema: CoreSchema = {
        "type": "function-plain",
        "function": {"type": "no-info", "function": check},
        "json_schema_input_schema": documented,  # type: ignore[typeddict-item]
    }
    return schema


def _text(
    *,
    limit: int | None = None,
    one_line: bool = False,
    stripped: bool = True,
    then: Callable[[str], list[str]] | None = None,
    documented: dict[str, Any] | None = None,
    description: str | None = None,
) -> CoreSchema:
    """Non-blank text within `limit` characters, kept `stripped`; `then` adds its own limits."""

    def check(value: object) -> str:
        if not isinstance(value, str) or not value.strip():
            raise _refused(_SHAPE, "must be non-empty text")
        text = value.strip()
        lines = []
        if one_line and any(not ch.isprintable() for ch in text):
            lines.append("must be one line of printable text")
        if limit is not None and len(text) > limit:
            lines.append(f"{len(text)} characters, at most {limit} (shorten it; it is not cut)")
        lines += then(text) if then else []
        if lines:
            raise _refused(LIMIT, *lines)
        return text if stripped else value

    shown = documented or {"type": "str", "min_length": 1, "pattern": r"\S"}
    return _leaf(check, {**shown, **({"max_length": limit} if limit else {})}, description)


def _hex(pattern: re.Pattern[str], what: str) -> Callable[[str], list[str]]:
    return lambda text: [] if pattern.fullmatch(text) else [f"{text!r} is not {what}"]


def _verb_led(label: str) -> list[str]:
    problem = verb_problem(label)
    return [problem] if problem else []


def _choice(values: Sequence[str], *, text_first: bool = False) -> CoreSchema:
    """One of `values`; `text_first`: anything but non-blank text is refused as a shape."""

    def check(value: object) -> str:
        if isinstance(value, str) and value in values:
            return value
        if text_first and not (isinstance(value, str) and value.strip()):
            raise _refused(_SHAPE, "must be non-empty text")
        kind = LIMIT if text_first else _SHAPE
        raise _refused(kind, f"{value!r} is not one of {', '.join(values)}")

    return _leaf(check, {"type": "literal", "expected": list(values)})


def _members(vocabulary: type[StrEnum]) -> list[str]:
    return [member.value for member in vocabulary]


def _whole(*, above: int | None = None) -> CoreSchema:
    """A whole number (a JSON true is not one), more than `above` if given."""

    def check(value: object) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise _refused(_SHAPE, "must be a whole number")
        if above is not None and value <= above:
            raise _refused(LIMIT, f"must be more than {above}, got {value}")
        return value

    return _leaf(check, {"type": "int", **({"gt": above} if above is not None else {})})


def _time(description: str | None = None) -> CoreSchema:
    """An ISO 8601 time with its UTC offset, kept as written."""

    def check(value: object) -> str:
        try:
            moment = datetime.fromisoformat(value) if isinstance(value, str) else None
        except ValueError:
            moment = None
        if moment is None or moment.tzinfo is None:
            raise _refused(_SHAPE, f"must be an ISO 8601 time with a UTC offset, got {value!r}")
        return str(value)

    return _leaf(check, {"type": "datetime"}, description)


def _nullable(
    schema: CoreSchema, refusal: str | None = None, *, description: str | None = None
) -> CoreSchema:
    """`schema` or null; `refusal` replaces whatever `schema` says when neither fits."""
    if refusal is None:
        return {"type": "nullable", "schema": schema}
    inner = SchemaValidator(schema)

    def check(value: object) -> object:
        try:
            return None if value is None else inner.validate_python(value)
        except ValidationError:
            raise _refused(_SHAPE, refusal) from None

    return _leaf(check, {"type": "nullable", "schema": schema}, description)


def _any_text(refusal: str, *, nullable: bool = False) -> CoreSchema:
    """Any string (blank too), or null when `nullable`."""

    def check(value: object) -> object:
        if isinstance(value, str) or (nullable and value is None):
            return value
        raise _refused(_SHAPE, refusal)

    text: CoreSchema = {"type": "str"}
    return _leaf(check, {"type": "nullable", "schema": text} if nullable else text)


def _record(
    fields: Mapping[str, CoreSchema],
    *,
    exact: bool = False,
    title: str | None = None,
    description: str | None = None,
) -> CoreSchema:
    """An object with exactly these keys; `exact`: a wrong set of keys is one refusal."""
    names = ", ".join(fields)

    def check(value: object) -> dict[str, Any]:
        if not isinstance(value, Mapping) or (exact and set(value) != set(fields)):
            raise _refused(_SHAPE, f"must be an object with {names}")
        return dict(value)

    shown: dict[str, Any] = {}
    if title:
        shown["title"] = title
    if description:
        shown["description"] = description
    record: dict[str, Any] = {
        "type": "typed-dict",
        "fields": {
            name: {"type": "typed-dict-field", "schema": schema, "required": True}
            for name, schema in fields.items()
        },
        "strict": True,
        "extra_behavior": "forbid",
        "metadata": {"pydantic_js_updates": shown},
    }
    schema: CoreSchema = {
        "type": "function-before",
        "function": {"type": "no-info", "function": check},
        "schema": record,  # type: ignore[typeddict-item]
    }
    return schema


def _list(
    items: CoreSchema, refusal: str, *, documented: Mapping[str, Any] | None = None
) -> CoreSchema:
    """A JSON array of `items`; `documented`: limits the JSON Schema states and
    parse_request checks itself, so that every entry is still judged (pydantic's own
    max_length stops at the first entry too many)."""

    def check(value: object) -> list[Any]:
        if not isinstance(value, list):
            raise _refused(_SHAPE, refusal)
        return value

    updates = {"pydantic_js_updates": dict(documented)} if documented else {}
    schema: CoreSchema = {
        "type": "function-before",
        "function": {"type": "no-info", "function": check},
        "schema": {"type": "list", "items_schema": items, "strict": True, "metadata": updates},
    }
    return schema


def _shapes() -> dict[str, CoreSchema]:
    """Every field's schema, in FIELDS order (the order problems are reported in)."""
    option = _record(
        {
            "label": _text(
                limit=LABEL_MAX,
                one_line=True,
                then=_verb_led,
                description=f"Verb-led button text, at most {LABEL_MAX} characters.",
            ),
            "value": _text(description="What the run receives when this option is chosen."),
        }
    )
    reply = _record(
        {
            "at": _time(),
            "raw_reply": _any_text("must be text"),
            "kind": _any_text("must be text or null", nullable=True),
            "reason": _any_text("must be text or null", nullable=True),
            "outcome": _choice(REPLY_OUTCOMES),
        },
        exact=True,
    )
    hex_id = {"type": "str", "pattern": f"^{REQUEST_ID.pattern}$"}
    return {
        "request_id": _text(
            then=_hex(REQUEST_ID, "12 lowercase hex characters"),
            documented=hex_id,
            description="12 lowercase hex characters (given with --request-id, else "
            "generated); the file is named <request_id>.json.",
        ),
        "created_at": _time("ISO 8601 with a UTC offset."),
        "situation": _text(description="What the run reported, in its words."),
        "policy": _text(description="The policy the run applied, as it stated it."),
        "prompt": _text(
            limit=PROMPT_MAX,
            one_line=True,
            description=f"The one-line question (mobile form: at most {PROMPT_MAX} characters).",
        ),
        "options": _list(
            option,
            "must be a list of {label, value}",
            documented={"minItems": 1, "maxItems": OPTIONS_MAX},
        ),
        "timeout_default": _record(
            {
                "after_minutes": _whole(above=0),
                "action": _choice(_members(TimeoutAction), text_first=True),
            }
        ),
        "context_refs": _list(_text(one_line=True), "must be a list of text"),
        "status": _choice(_members(RequestStatus)),
        "trigger_type": _choice(_members(TriggerType)),
        "severity": _choice(_members(Severity)),
        "needs_human": _record(
            {"reason": _text(stripped=False), "rule": _text(stripped=False)},
            description="Compose mode's answer: why a human is needed and which design rule "
            "said so.",
        ),
        "design": _record(
            {
                "name": _text(stripped=False),
                "version": _whole(above=0),
                "content_hash": _text(
                    stripped=False,
                    then=_hex(CONTENT_HASH, "64 lowercase hex characters"),
                    documented={"type": "str", "pattern": f"^{CONTENT_HASH.pattern}$"},
                ),
            },
            description="The design record that decided, cited exactly.",
        ),
        "escalation_id": _nullable(
            _text(stripped=False),
            "must be non-empty text or null",
            description="The filed escalation; null when not filed (offline, or filing failed).",
        ),
        # Its request_id must be this request's (request_parsing), so it is 12 hex characters.
        "decision": _nullable(
            _record(
                {
                    name: _text(stripped=False, documented=hex_id if name == "request_id" else None)
                    for name in DECISION_FIELDS
                }
            )
        ),
        "resolved_at": _nullable(_time()),
        "replies": _list(reply, "must be a list"),
    }


def request_schema(*, nested: bool = False) -> CoreSchema:
    """The request's core schema: flat, as parse_request reads it, or `nested` as the file is
    written (JobClaw's fields, then this service's under "escalate")."""
    shapes = _shapes()
    if not nested:
        return _record(shapes)
    ours = _record(
        {name: shapes[name] for name in EXTRA_FIELDS},
        description="This service's own fields, kept apart from JobClaw's request fields: the "
        "needs-human verdict, the design, the filed escalation, the decision and every reply.",
    )
    return _record(
        {**{name: shapes[name] for name in SEED_FIELDS}, EXTRA_KEY: ours},
        title="Request file (requests/<request_id>.json, SPEC §7; JobClaw's "
        "request-human-input schema)",
        description="Written by `escalate request compose` when the design says a human is "
        "needed; updated by `escalate request parse`. Rules a schema cannot state are checked "
        "by workflows/request_parsing.py: option labels are verb-led, labels are distinct, "
        "harm_risk requests abort on timeout, a resolved request carries its decision and "
        "resolved_at (an open or expired one neither), and no field holds a secret.",
    )


VALIDATOR = SchemaValidator(request_schema())
