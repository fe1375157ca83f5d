"""The leaf checks the request file's schema is built from (workflows/request_shape.py).

Each is a pydantic-core schema whose check words its own refusal in the SPEC's lines
(scripts and tests read them) and documents itself to JSON Schema by the plain schema it
stands for. A SHAPE refusal says a field is not what it must be; a LIMIT refusal, that it
is but breaks a limit, and is only said once the record's fields are all present and typed
(workflows/request_parsing.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pydantic_core import PydanticCustomError, SchemaValidator, ValidationError

if TYPE_CHECKING:
    from pydantic_core.core_schema import CoreSchema

SHAPE, LIMIT = "request_shape", "request_limit"  # the two kinds of refusal, see above


def refused(kind: str, *lines: str) -> PydanticCustomError:
    return PydanticCustomError(kind, "{lines}", {"lines": list(lines)})


def leaf(
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


def text(
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
            raise refused(SHAPE, "must be non-empty text")
        kept = value.strip()
        lines = []
        if one_line and any(not ch.isprintable() for ch in kept):
            lines.append("must be one line of printable text")
        if limit is not None and len(kept) > limit:
            lines.append(f"{len(kept)} characters, at most {limit} (shorten it; it is not cut)")
        lines += then(kept) if then else []
        if lines:
            raise refused(LIMIT, *lines)
        return kept if stripped else value

    shown = documented or {"type": "str", "min_length": 1, "pattern": r"\S"}
    return leaf(check, {**shown, **({"max_length": limit} if limit else {})}, description)


def hex_digits(pattern: re.Pattern[str], what: str) -> Callable[[str], list[str]]:
    return lambda text: [] if pattern.fullmatch(text) else [f"{text!r} is not {what}"]


def choice(values: Sequence[str], *, text_first: bool = False) -> CoreSchema:
    """One of `values`; `text_first`: anything but non-blank text is refused as a shape."""

    def check(value: object) -> str:
        if isinstance(value, str) and value in values:
            return value
        if text_first and not (isinstance(value, str) and value.strip()):
            raise refused(SHAPE, "must be non-empty text")
        kind = LIMIT if text_first else SHAPE
        raise refused(kind, f"{value!r} is not one of {', '.join(values)}")

    return leaf(check, {"type": "literal", "expected": list(values)})


def members(vocabulary: type[StrEnum]) -> list[str]:
    return [member.value for member in vocabulary]


def whole(*, above: int | None = None) -> CoreSchema:
    """A whole number (a JSON true is not one), more than `above` if given."""

    def check(value: object) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise refused(SHAPE, "must be a whole number")
        if above is not None and value <= above:
            raise refused(LIMIT, f"must be more than {above}, got {value}")
        return value

    return leaf(check, {"type": "int", **({"gt": above} if above is not None else {})})


def timestamp(description: str | None = None) -> CoreSchema:
    """An ISO 8601 time with its UTC offset, kept as written."""

    def check(value: object) -> str:
        try:
            moment = datetime.fromisoformat(value) if isinstance(value, str) else None
        except ValueError:
            moment = None
        if moment is None or moment.tzinfo is None:
            raise refused(SHAPE, f"must be an ISO 8601 time with a UTC offset, got {value!r}")
        return str(value)

    return leaf(check, {"type": "datetime"}, description)


def nullable(
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
            raise refused(SHAPE, refusal) from None

    return leaf(check, {"type": "nullable", "schema": schema}, description)


def any_text(refusal: str, *, nullable: bool = False) -> CoreSchema:
    """Any string (blank too), or null when `nullable`."""

    def check(value: object) -> object:
        if isinstance(value, str) or (nullable and value is None):
            return value
        raise refused(SHAPE, refusal)

    plain: CoreSchema = {"type": "str"}
    return leaf(check, {"type": "nullable", "schema": plain} if nullable else plain)


def record(
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
            raise refused(SHAPE, f"must be an object with {names}")
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
    return _checked_first(check, record)


def list_of(
    items: CoreSchema, refusal: str, *, documented: Mapping[str, Any] | None = None
) -> CoreSchema:
    """A JSON array of `items`; `documented`: limits the JSON Schema states and
    parse_request checks itself, so that every entry is still judged (pydantic's own
    max_length stops at the first entry too many)."""

    def check(value: object) -> list[Any]:
        if not isinstance(value, list):
            raise refused(SHAPE, refusal)
        return value

    updates = {"pydantic_js_updates": dict(documented)} if documented else {}
    return _checked_first(
        check, {"type": "list", "items_schema": items, "strict": True, "metadata": updates}
    )


def _checked_first(check: Callable[[Any], Any], schema: Mapping[str, Any]) -> CoreSchema:
    """`schema`, with `check` run before it: a value of the wrong kind is one refusal in the
    SPEC's words, not pydantic's error per field."""
    checked: CoreSchema = {
        "type": "function-before",
        "function": {"type": "no-info", "function": check},
        "schema": schema,  # type: ignore[typeddict-item]
    }
    return checked
