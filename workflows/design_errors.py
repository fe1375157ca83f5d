"""A design's problems in a person's words: DesignError, rule errors, pydantic errors as lines."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence

from pydantic import BaseModel
from pydantic_core import ErrorDetails, PydanticCustomError

from workflows.vocabulary import TriggerType


def rule_error(detail: str, path: str = "") -> PydanticCustomError:
    """A design-rule error; `path` extends the error's location below the validated model."""
    # The detail goes through ctx so braces in user text are never read as a template.
    return PydanticCustomError("design_rule", "{detail}", {"detail": detail, "path": path})


def describe_error(
    error: ErrorDetails, models_at: Mapping[tuple[str, ...], type[BaseModel]]
) -> str:
    """One pydantic error as `key.path: what is wrong`; `models_at`: valid keys by place."""
    kind, ctx, value = error["type"], error.get("ctx") or {}, error.get("input")
    loc = [str(part) for part in error["loc"]]
    if kind == "design_rule" and ctx.get("path"):
        loc += str(ctx["path"]).split(".")
    if loc[:1] == ["tools"] and "[key]" in loc:  # a tool name pattern that does not compile
        loc.remove("[key]")
    if "[key]" in loc:  # a dict key failed, i.e. a trigger name that is not a trigger type
        valid = [t.value for t in TriggerType]
        return f"{_path(loc[:2])}: unknown trigger type ({hint_names(loc[1], valid)})"
    path = _path(loc)
    if kind == "missing":
        parent, key = _path(loc[:-1]), loc[-1]
        what = (
            f"missing tier {key!r}"
            if loc[:-1] == ["severities"]
            else f"missing required key {key!r}"
        )
        return f"{parent}: {what}" if parent else what
    if kind == "extra_forbidden":
        above = loc[:-1]
        shape = tuple(
            "*" if part.isdigit() else part
            for part in above[:1] + ["*"] * (len(above) > 1) + above[2:]
        )
        valid = list(models_at[shape].model_fields) if shape in models_at else []
        noun = "tier" if shape == ("severities",) else "key"
        return f"{path}: unknown {noun} ({hint_names(loc[-1], valid)})"
    if kind == "enum":
        expected = str(ctx.get("expected", "")).replace("'", "")
        return f"{path}: {value!r} is not valid (use {expected})"
    words = {
        "design_rule": str(ctx.get("detail", "")),
        "string_type": f"expected text, got {describe_kind(value)}",
        "string_too_short": "must not be empty",
        "int_type": f"expected a whole number, got {describe_kind(value)}",
        "float_type": f"expected a number, got {describe_kind(value)}",
        "greater_than_equal": f"must be at least {ctx.get('ge')}, got {value!r}",
        "greater_than": f"must be more than {ctx.get('gt', 0):g}, got {value!r}",
        "too_short": "must list at least one entry",
        **dict.fromkeys(
            ("dict_type", "model_type", "model_attributes_type"),
            f"expected a mapping (key: value), got {describe_kind(value)}",
        ),
        "tuple_type": f"expected a list, got {describe_kind(value)}",
    }
    what = words.get(kind) or f"{error['msg'][:1].lower()}{error['msg'][1:]}"
    return f"{path}: {what}" if path else what


def _path(loc: Sequence[str]) -> str:
    """Join a location as YAML readers know it: severities.high.window, changes[0].reason."""
    path = ""
    for part in loc:
        path += f"[{part}]" if part.isdigit() else (f".{part}" if path else part)
    return path


def hint_names(word: str, valid: Sequence[str]) -> str:
    """List the valid names, first the likely one when `word` looks like a typo of it."""
    close = difflib.get_close_matches(word, valid, n=1, cutoff=0.6)
    guess = f"did you mean {close[0]!r}? " if close else ""
    return f"{guess}valid: {', '.join(valid)}"


def describe_kind(value: object) -> str:
    """Name a YAML value's kind for an error message, with a short excerpt."""
    if value is None or isinstance(value, dict | list):
        return (
            "a mapping" if isinstance(value, dict) else "a list" if value is not None else "nothing"
        )
    if isinstance(value, bool):
        return f"true/false {str(value).lower()}"
    noun = "text" if isinstance(value, str) else "number" if isinstance(value, int | float) else ""
    excerpt = repr(value) if len(repr(value)) <= 40 else f"{repr(value)[:40]}..."
    return f"{noun} {excerpt}".strip()
