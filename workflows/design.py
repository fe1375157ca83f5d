"""The design record (SPEC §2): triggers, never-escalate cases, tiers and who decides."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from workflows.chains import Chain, ChainLevel
from workflows.design_errors import describe_error, describe_kind, rule_error
from workflows.design_fields import (
    CaseTag,
    Duration,
    Identity,
    PositiveNumber,
    Tag,
    Text,
    TriggerName,
    to_timedelta,
)
from workflows.durations import format_duration
from workflows.errors import DesignError
from workflows.identities import identity_key
from workflows.tool_rules import ToolRule, check_tool_name
from workflows.vocabulary import (
    CRITICAL_WAITING,
    Severity,
    TimeoutAction,
    TriggerType,
    WaitingBehavior,
)
from workflows.working_hours import WorkingHours

SEVERITY_ORDER: tuple[Severity, ...] = tuple(Severity)  # least to most severe


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
            raise rule_error(f"counter {self.counter!r} needs a threshold", "threshold")
        if self.threshold is not None and self.counter is None:
            raise rule_error(
                "a threshold needs a counter (the fact it is compared with)", "counter"
            )
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
            raise rule_error(
                f"{self.primary!r} is the primary; it cannot also get a copy", "copies"
            )
        if len(set(self.copies)) != len(self.copies):
            raise rule_error("a tag is listed twice", "copies")
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
    # Below critical, pages wait for these hours to open (workflows/working_hours.py).
    hours: WorkingHours | None = None
    # Levels paged after the first notice until a decision (or an ack) stops them.
    chain: Chain | None = None

    @model_validator(mode="before")
    @classmethod
    def _default_timeout(cls, data: object) -> object:
        # timeout defaults to 2 x window: one window to answer, one more after the follow-up.
        if isinstance(data, dict) and "timeout" not in data:
            try:
                window = to_timedelta(data.get("window"))
            except PydanticCustomError:
                window = None
            # A bad or missing window is reported on its own; the placeholder never survives.
            doubled = window * 2 if isinstance(window, timedelta) else timedelta(days=1)
            return {**data, "timeout": doubled}
        return data

    @model_validator(mode="after")
    def _timeout_after_window(self) -> Tier:
        if self.timeout <= self.window:
            raise rule_error(
                f"timeout {format_duration(self.timeout)} must be longer than window "
                f"{format_duration(self.window)}, so the follow-up has time to be answered",
                "timeout",
            )
        keys = [identity_key(pattern) for pattern in self.deciders]
        for i, key in enumerate(keys):
            if keys.index(key) != i:
                raise rule_error(
                    f"{self.deciders[i]!r} is listed twice (identities ignore case)",
                    f"deciders.{i}",
                )
        if self.chain is not None:
            self._check_chain(self.chain)
        return self

    def _check_chain(self, chain: Chain) -> None:
        if self.next_tier is not None:
            raise rule_error(
                "a tier with a chain pages its levels instead of a next tier: list "
                f"{self.next_tier.value}'s recipient as a chain level and leave next_tier out",
                "next_tier",
            )
        if self.timeout_default is not TimeoutAction.HOLD and chain.span >= self.timeout:
            raise rule_error(
                f"the chain's last page is due {format_duration(chain.span)} after the first "
                f"notice, not before the timeout {format_duration(self.timeout)}: those pages "
                "would never go out (shorten the levels' after, lower repeat, or lengthen "
                "the timeout)",
                "chain",
            )


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
            raise rule_error(f"critical must be paused or stopped, got {got!r}", "waiting_behavior")
        if tier.hours is not None:
            raise rule_error(
                "critical pages pierce working hours, so critical takes no hours: leave them out",
                "hours",
            )
        return tier

    @model_validator(mode="after")
    def _next_tier_more_severe(self) -> Severities:
        for rank, severity in enumerate(SEVERITY_ORDER):
            target = getattr(self, severity.value).next_tier
            if target is not None and SEVERITY_ORDER.index(target) <= rank:
                above = ", ".join(s.value for s in SEVERITY_ORDER[rank + 1 :])
                allowed = f"one of: {above}" if above else "critical is the top tier, leave it out"
                raise rule_error(
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
    # An agent's tool calls that need a person first, per tool name (workflows/tool_rules.py).
    tools: dict[Annotated[str, AfterValidator(check_tool_name)], tuple[ToolRule, ...]] = Field(
        default_factory=dict
    )

    @model_validator(mode="after")
    def _consistent(self) -> Design:
        for tool, rules in self.tools.items():
            for i, rule in enumerate(rules):
                if rule.trigger not in self.triggers:
                    raise rule_error(
                        f"trigger {rule.trigger.value!r} is not among the design's triggers",
                        f"tools.{tool}.{i}.trigger",
                    )
        for i, change in enumerate(self.changes):
            if change.version > self.version:
                raise rule_error(
                    f"version {change.version} is newer than the design's version {self.version}",
                    f"changes.{i}.version",
                )
            if [c.version for c in self.changes].count(change.version) > 1:
                raise rule_error(
                    f"version {change.version} is listed twice", f"changes.{i}.version"
                )
        names = [rule.rule for rule in self.never_escalate]
        for i, name in enumerate(names):
            if names.count(name) > 1:
                raise rule_error(f"rule name {name!r} is used twice", f"never_escalate.{i}.rule")
        for trigger_type, trigger in self.triggers.items():
            if trigger.when_missing and trigger_type is not TriggerType.MISSING_INPUT:
                raise rule_error(
                    "when_missing only applies to missing_input",
                    f"triggers.{trigger_type.value}.when_missing",
                )
        for i, trigger_type in enumerate(self.owner_may_not_approve):
            if self.owner_may_not_approve.index(trigger_type) != i:
                raise rule_error(
                    f"{trigger_type.value} is listed twice", f"owner_may_not_approve.{i}"
                )
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
            for key in ("deciders", "hours", "chain"):
                if not tier[key]:
                    del tier[key]
        if not data["destructive_options"]:
            del data["destructive_options"]
        if not data["tools"]:
            del data["tools"]
        canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()


def parse_design(data: object, *, source: str) -> Design:
    """Check already-parsed data as a design; raise DesignError with one line per problem."""
    if data is None:
        raise DesignError(source, ["the design is empty"])
    if not isinstance(data, dict):
        raise DesignError(
            source,
            [
                f"a design must be a mapping (name, version, triggers, severities, ...), "
                f"got {describe_kind(data)}"
            ],
        )
    try:
        return Design.model_validate(data)
    except ValidationError as exc:
        problems = [describe_error(error, _MODEL_AT) for error in exc.errors(include_url=False)]
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
    ("severities", "*", "hours"): WorkingHours,
    ("severities", "*", "chain"): Chain,
    ("severities", "*", "chain", "levels", "*"): ChainLevel,
    ("tools", "*", "*"): ToolRule,
}
