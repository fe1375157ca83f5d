"""The design record (SPEC §2): triggers, never-escalate cases, tiers and who decides; loader."""

from __future__ import annotations

import difflib
import hashlib
import json
import os
from collections.abc import Hashable, Sequence
from datetime import timedelta
from typing import Annotated, Any

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from workflows.durations import ACCEPTED_FORMS, format_duration, parse_duration
from workflows.responders import check_pattern, identity_key
from workflows.vocabulary import (
    CRITICAL_WAITING,
    Severity,
    TimeoutAction,
    TriggerType,
    WaitingBehavior,
)

SEVERITY_ORDER: tuple[Severity, ...] = tuple(Severity)  # least to most severe


def _rule(detail: str, path: str = "") -> PydanticCustomError:
    """A design-rule error; `path` extends the error's location below the validated model."""
    # The detail goes through ctx so braces in user text are never read as a template.
    return PydanticCustomError("design_rule", "{detail}", {"detail": detail, "path": path})


def _to_timedelta(value: object) -> object:
    """Read a duration written as text; numbers are refused because they carry no unit."""
    if isinstance(value, timedelta):
        return value
    if value is None:
        raise _rule(f"a duration is required ({ACCEPTED_FORMS})")
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise _rule(f"{value} has no unit (write e.g. {value}s or {value}m)")
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except ValueError as exc:
            raise _rule(str(exc)) from None
    raise _rule(f"{value!r} is not a duration ({ACCEPTED_FORMS})")


def _check_tag(value: object) -> object:
    """Accept an apprise tag; refuse URLs, which may carry tokens and belong in apprise config."""
    if not isinstance(value, str):
        return value  # the str type check reports it
    tag = value.strip()
    if not tag:
        raise _rule("must be an apprise tag, got an empty value")
    if "://" in tag:
        raise _rule("must be an apprise tag (e.g. ops), not a URL: URLs go in the apprise config")
    if any(ch.isspace() or ch == "," for ch in tag):
        raise _rule(f"{tag!r} is not one apprise tag (no spaces or commas)")
    return tag


def _check_identity(value: object) -> object:
    """Accept a decider pattern: channel:id, channel:*, link via <tag> or link:*."""
    if not isinstance(value, str):
        return value  # the str type check reports it
    try:
        return check_pattern(value)
    except ValueError as exc:
        raise _rule(str(exc)) from None


def _check_trigger_name(value: object) -> object:
    """Refuse a trigger name that is not a trigger type, listing the valid ones."""
    valid = [t.value for t in TriggerType]
    if isinstance(value, str) and value not in valid:
        raise _rule(f"unknown trigger type ({_hint(value, valid)})")
    return value


Duration = Annotated[
    timedelta,
    BeforeValidator(_to_timedelta),
    PlainSerializer(format_duration, return_type=str, when_used="json"),
]
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Tag = Annotated[str, BeforeValidator(_check_tag)]
CaseTag = Annotated[str, StringConstraints(strip_whitespace=True, to_lower=True, min_length=1)]
PositiveNumber = Annotated[float, Field(gt=0, strict=True)]
Identity = Annotated[str, BeforeValidator(_check_identity)]
TriggerName = Annotated[TriggerType, BeforeValidator(_check_trigger_name)]


class _Frozen(BaseModel):
    # extra="forbid" turns a typo ("windw") into an error instead of a silently ignored key.
    model_config = ConfigDict(frozen=True, extra="forbid")


class Change(_Frozen):
    """Why one version of the design exists."""

    version: Annotated[int, Field(ge=1, strict=True)]
    reason: Text


class Trigger(_Frozen):
    """The concrete test that fires one trigger type, and what the machine can check of it."""

    test: Text
    counter: Text | None = None
    threshold: PositiveNumber | None = None
    retry_limit: Annotated[int, Field(ge=0, strict=True)] | None = None
    when_missing: tuple[Text, ...] = ()

    @model_validator(mode="after")
    def _counter_with_threshold(self) -> Trigger:
        if self.counter is not None and self.threshold is None:
            raise _rule(f"counter {self.counter!r} needs a threshold", "threshold")
        if self.threshold is not None and self.counter is None:
            raise _rule("a threshold needs a counter (the fact it is compared with)", "counter")
        return self


class NeverEscalate(_Frozen):
    """A routine case that must never escalate, matched on the situation's case tag."""

    rule: Text
    test: Text
    cases: Annotated[tuple[CaseTag, ...], Field(min_length=1)]


class Recipient(_Frozen):
    """Who decides: one primary apprise tag, plus tags that receive marked copies."""

    primary: Tag
    copies: tuple[Tag, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _bare_tag(cls, data: object) -> object:
        return {"primary": data} if isinstance(data, str) else data

    @model_validator(mode="after")
    def _distinct(self) -> Recipient:
        if self.primary in self.copies:
            raise _rule(f"{self.primary!r} is the primary; it cannot also get a copy", "copies")
        if len(set(self.copies)) != len(self.copies):
            raise _rule("a tag is listed twice", "copies")
        return self


class Tier(_Frozen):
    """One severity tier: window, timeout, recipient, waiting, timeout default, who may decide."""

    window: Duration
    timeout: Duration
    recipient: Recipient
    waiting_behavior: WaitingBehavior
    timeout_default: TimeoutAction
    next_tier: Severity | None = None
    # Empty: anyone the case reaches may decide. Matching is in workflows/responders.py.
    deciders: tuple[Identity, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _default_timeout(cls, data: object) -> object:
        # timeout defaults to 2 x window: one window to answer, one more after the follow-up.
        if isinstance(data, dict) and "timeout" not in data:
            try:
                window = _to_timedelta(data.get("window"))
            except PydanticCustomError:
                window = None
            # A bad or missing window is reported on its own; the placeholder never survives.
            doubled = window * 2 if isinstance(window, timedelta) else timedelta(days=1)
            return {**data, "timeout": doubled}
        return data

    @model_validator(mode="after")
    def _timeout_after_window(self) -> Tier:
        if self.timeout <= self.window:
            raise _rule(
                f"timeout {format_duration(self.timeout)} must be longer than window "
                f"{format_duration(self.window)}, so the follow-up has time to be answered",
                "timeout",
            )
        keys = [identity_key(pattern) for pattern in self.deciders]
        for i, key in enumerate(keys):
            if keys.index(key) != i:
                raise _rule(
                    f"{self.deciders[i]!r} is listed twice (identities ignore case)",
                    f"deciders.{i}",
                )
        return self


class Severities(_Frozen):
    """All four tiers; none may be left out."""

    low: Tier
    medium: Tier
    high: Tier
    critical: Tier

    @field_validator("critical")
    @classmethod
    def _critical_stops(cls, tier: Tier) -> Tier:
        if tier.waiting_behavior not in CRITICAL_WAITING:
            got = tier.waiting_behavior.value
            raise _rule(f"critical must be paused or stopped, got {got!r}", "waiting_behavior")
        return tier

    @model_validator(mode="after")
    def _next_tier_more_severe(self) -> Severities:
        for rank, severity in enumerate(SEVERITY_ORDER):
            target = getattr(self, severity.value).next_tier
            if target is not None and SEVERITY_ORDER.index(target) <= rank:
                above = ", ".join(s.value for s in SEVERITY_ORDER[rank + 1 :])
                allowed = f"one of: {above}" if above else "critical is the top tier, leave it out"
                raise _rule(
                    f"must be a tier more severe than {severity.value} ({allowed}), "
                    f"got {target.value!r}",
                    f"{severity.value}.next_tier",
                )
        return self


class Design(_Frozen):
    """A versioned design record: what escalates, what never does, and how each tier is routed."""

    name: Text
    version: Annotated[int, Field(ge=1, strict=True)]
    changes: tuple[Change, ...] = ()
    triggers: Annotated[dict[TriggerType, Trigger], Field(min_length=1)]
    never_escalate: tuple[NeverEscalate, ...] = ()
    severities: Severities
    # Trigger types whose cases the run's own owner may not approve (they may still stop them).
    owner_may_not_approve: tuple[TriggerName, ...] = (TriggerType.HARM_RISK,)
    # Option labels (any case) whose answer needs an explicit "CONFIRM <label>".
    destructive_options: tuple[Text, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> Design:
        for i, change in enumerate(self.changes):
            if change.version > self.version:
                raise _rule(
                    f"version {change.version} is newer than the design's version {self.version}",
                    f"changes.{i}.version",
                )
            if [c.version for c in self.changes].count(change.version) > 1:
                raise _rule(f"version {change.version} is listed twice", f"changes.{i}.version")
        names = [rule.rule for rule in self.never_escalate]
        for i, name in enumerate(names):
            if names.count(name) > 1:
                raise _rule(f"rule name {name!r} is used twice", f"never_escalate.{i}.rule")
        for trigger_type, trigger in self.triggers.items():
            if trigger.when_missing and trigger_type is not TriggerType.MISSING_INPUT:
                raise _rule(
                    "when_missing only applies to missing_input",
                    f"triggers.{trigger_type.value}.when_missing",
                )
        for i, trigger_type in enumerate(self.owner_may_not_approve):
            if self.owner_may_not_approve.index(trigger_type) != i:
                raise _rule(f"{trigger_type.value} is listed twice", f"owner_may_not_approve.{i}")
        return self

    def tier(self, severity: Severity | str) -> Tier:
        """The tier for a severity."""
        tier: Tier = getattr(self.severities, Severity(severity).value)
        return tier

    def trigger(self, trigger_type: TriggerType | str) -> Trigger | None:
        """The design's trigger for a type, or None when the design does not list it."""
        return self.triggers.get(TriggerType(trigger_type))

    def timeout_action(
        self, severity: Severity | str, trigger_type: TriggerType | str
    ) -> TimeoutAction:
        """The timeout default; harm_risk always aborts, since its actions are irreversible."""
        if TriggerType(trigger_type) is TriggerType.HARM_RISK:
            return TimeoutAction.ABORT
        return self.tier(severity).timeout_default

    @property
    def content_hash(self) -> str:
        """sha256 hex of the canonical JSON, so an escalation can cite the exact design it used."""
        data = self.model_dump(mode="json")
        # Keys added after designs were first hashed count only when set, so a design that
        # does not use them keeps the hash it was cited by.
        if data["owner_may_not_approve"] == [TriggerType.HARM_RISK.value]:
            del data["owner_may_not_approve"]
        for tier in data["severities"].values():
            if not tier["deciders"]:
                del tier["deciders"]
        if not data["destructive_options"]:
            del data["destructive_options"]
        canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()


class DesignError(ValueError):
    """A design that cannot be used; `problems` holds one actionable line per problem."""

    def __init__(self, source: str, problems: Sequence[str]) -> None:
        self.source = source
        self.problems = list(problems)
        super().__init__("\n".join(f"{source}: {problem}" for problem in self.problems))


class _DuplicateKey(yaml.MarkedYAMLError):
    """A key written twice in one mapping."""


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys, where the later one would silently win."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[object] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # "<<: *anchor" may legitimately be overridden
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, Hashable) and key in seen:
                raise _DuplicateKey(
                    problem=f"duplicate key {key!r} (write each key once)",
                    problem_mark=key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_design(path: str | os.PathLike[str]) -> Design:
    """Read and check a design file; raise DesignError naming the file and each problem."""
    source = os.fspath(path)
    try:
        with open(source, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise DesignError(source, ["cannot read: no such file"]) from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise DesignError(source, [f"cannot read: {reason}"]) from None
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass: safe
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        kind = "" if isinstance(exc, _DuplicateKey) else "YAML syntax error: "
        raise DesignError(source, [f"{where}{kind}{exc.problem}"]) from None
    except yaml.YAMLError as exc:
        raise DesignError(source, [f"YAML syntax error: {exc}"]) from None
    return parse_design(data, source=source)


def parse_design(data: object, *, source: str) -> Design:
    """Check already-parsed data as a design; raise DesignError with one line per problem."""
    if data is None:
        raise DesignError(source, ["the design is empty"])
    if not isinstance(data, dict):
        raise DesignError(
            source,
            [
                f"a design must be a mapping (name, version, triggers, severities, ...), "
                f"got {_kind(data)}"
            ],
        )
    try:
        return Design.model_validate(data)
    except ValidationError as exc:
        problems = [_describe(error) for error in exc.errors(include_url=False)]
        raise DesignError(source, list(dict.fromkeys(problems))) from None


# Where an unknown key was found -> the model whose keys are valid there.
_MODEL_AT: dict[tuple[str, ...], type[BaseModel]] = {
    (): Design,
    ("changes", "*"): Change,
    ("triggers", "*"): Trigger,
    ("never_escalate", "*"): NeverEscalate,
    ("severities",): Severities,
    ("severities", "*"): Tier,
    ("severities", "*", "recipient"): Recipient,
}


def _describe(error: ErrorDetails) -> str:
    """Translate one pydantic error into `key.path: what is wrong` in a person's words."""
    kind, ctx, value = error["type"], error.get("ctx") or {}, error.get("input")
    loc = [str(part) for part in error["loc"]]
    if kind == "design_rule" and ctx.get("path"):
        loc += str(ctx["path"]).split(".")
    if "[key]" in loc:  # a dict key failed, i.e. a trigger name that is not a trigger type
        valid = [t.value for t in TriggerType]
        return f"{_path(loc[:2])}: unknown trigger type ({_hint(loc[1], valid)})"
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
        shape = tuple(above[:1] + ["*"] * (len(above) > 1) + above[2:])
        valid = list(_MODEL_AT[shape].model_fields) if shape in _MODEL_AT else []
        noun = "tier" if shape == ("severities",) else "key"
        return f"{path}: unknown {noun} ({_hint(loc[-1], valid)})"
    if kind == "enum":
        expected = str(ctx.get("expected", "")).replace("'", "")
        return f"{path}: {value!r} is not valid (use {expected})"
    words = {
        "design_rule": str(ctx.get("detail", "")),
        "string_type": f"expected text, got {_kind(value)}",
        "string_too_short": "must not be empty",
        "int_type": f"expected a whole number, got {_kind(value)}",
        "float_type": f"expected a number, got {_kind(value)}",
        "greater_than_equal": f"must be at least {ctx.get('ge')}, got {value!r}",
        "greater_than": f"must be more than {ctx.get('gt', 0):g}, got {value!r}",
        "too_short": "must list at least one entry",
        **dict.fromkeys(
            ("dict_type", "model_type", "model_attributes_type"),
            f"expected a mapping (key: value), got {_kind(value)}",
        ),
        "tuple_type": f"expected a list, got {_kind(value)}",
    }
    what = words.get(kind) or f"{error['msg'][:1].lower()}{error['msg'][1:]}"
    return f"{path}: {what}" if path else what


def _path(loc: Sequence[str]) -> str:
    """Join a location as YAML readers know it: severities.high.window, changes[0].reason."""
    path = ""
    for part in loc:
        path += f"[{part}]" if part.isdigit() else (f".{part}" if path else part)
    return path


def _hint(word: str, valid: Sequence[str]) -> str:
    """List the valid names, first the likely one when `word` looks like a typo of it."""
    close = difflib.get_close_matches(word, valid, n=1, cutoff=0.6)
    guess = f"did you mean {close[0]!r}? " if close else ""
    return f"{guess}valid: {', '.join(valid)}"


def _kind(value: object) -> str:
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
