"""The design record's field types: durations, apprise tags, decider patterns, trigger names."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from pydantic import BeforeValidator, Field, PlainSerializer, StringConstraints

from workflows.design_errors import hint_names, rule_error
from workflows.durations import ACCEPTED_FORMS, format_duration, parse_duration
from workflows.identities import check_pattern
from workflows.vocabulary import TriggerType


def to_timedelta(value: object) -> object:
    """Read a duration written as text; numbers are refused because they carry no unit."""
    if isinstance(value, timedelta):
        return value
    if value is None:
        raise rule_error(f"a duration is required ({ACCEPTED_FORMS})")
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise rule_error(f"{value} has no unit (write e.g. {value}s or {value}m)")
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except ValueError as exc:
            raise rule_error(str(exc)) from None
    raise rule_error(f"{value!r} is not a duration ({ACCEPTED_FORMS})")


def _check_tag(value: object) -> object:
    """Accept an apprise tag; refuse URLs, which may carry tokens and belong in apprise config."""
    if not isinstance(value, str):
        return value  # the str type check reports it
    tag = value.strip()
    if not tag:
        raise rule_error("must be an apprise tag, got an empty value")
    if "://" in tag:
        raise rule_error(
            "must be an apprise tag (e.g. ops), not a URL: URLs go in the apprise config"
        )
    if any(ch.isspace() or ch == "," for ch in tag):
        raise rule_error(f"{tag!r} is not one apprise tag (no spaces or commas)")
    return tag


def _check_identity(value: object) -> object:
    """Accept a decider pattern: channel:id, channel:*, link via <tag> or link:*."""
    if not isinstance(value, str):
        return value  # the str type check reports it
    try:
        return check_pattern(value)
    except ValueError as exc:
        raise rule_error(str(exc)) from None


def _check_trigger_name(value: object) -> object:
    """Refuse a trigger name that is not a trigger type, listing the valid ones."""
    valid = [t.value for t in TriggerType]
    if isinstance(value, str) and value not in valid:
        raise rule_error(f"unknown trigger type ({hint_names(value, valid)})")
    return value


Duration = Annotated[
    timedelta,
    BeforeValidator(to_timedelta),
    PlainSerializer(format_duration, return_type=str, when_used="json"),
]
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Tag = Annotated[str, BeforeValidator(_check_tag)]
CaseTag = Annotated[str, StringConstraints(strip_whitespace=True, to_lower=True, min_length=1)]
PositiveNumber = Annotated[float, Field(gt=0, strict=True)]
Identity = Annotated[str, BeforeValidator(_check_identity)]
TriggerName = Annotated[TriggerType, BeforeValidator(_check_trigger_name)]
