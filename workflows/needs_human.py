"""Compose mode (SPEC §2): given a situation and the design record, does it need a human?"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from workflows.design import Design, Trigger
from workflows.vocabulary import TriggerType


@dataclass(frozen=True, kw_only=True)
class Situation:
    """The facts a run reports when it wonders whether to escalate."""

    trigger_type: TriggerType | None = None
    counters: Mapping[str, float] = field(default_factory=dict)
    missing_inputs: frozenset[str] = frozenset()
    case: str | None = None
    recoverable: bool = False
    retries_left: int | None = None
    repo_answers: bool = False
    description: str = ""

    def __post_init__(self) -> None:
        # Callers pass JSON-ish values (a trigger name, a list); normalise once, here.
        if self.trigger_type is not None:
            object.__setattr__(self, "trigger_type", TriggerType(self.trigger_type))
        object.__setattr__(self, "counters", MappingProxyType(dict(self.counters)))
        object.__setattr__(self, "missing_inputs", frozenset(self.missing_inputs))
        case = self.case.strip().lower() if self.case else None
        object.__setattr__(self, "case", case or None)


@dataclass(frozen=True)
class NeedsHuman:
    """The answer: whether to escalate, one concrete line why, and which rule decided."""

    needs_human: bool
    reason: str
    rule: str

    def to_dict(self) -> dict[str, object]:
        """The compose-mode answer as JSON-ready data."""
        return {"needs_human": self.needs_human, "reason": self.reason, "rule": self.rule}


def decide_needs_human(design: Design, situation: Situation) -> NeedsHuman:
    """Apply the design to the situation: never-escalate cases first, then the trigger's test."""
    if situation.case is not None:
        for never in design.never_escalate:
            if situation.case in never.cases:
                return NeedsHuman(
                    False,
                    f"never escalate: case {situation.case!r} is routine under rule "
                    f"{never.rule!r} ({never.test})",
                    f"never_escalate:{never.rule}",
                )
    trigger = design.trigger(situation.trigger_type) if situation.trigger_type else None
    left, limit = _retries(situation, trigger)
    if situation.recoverable and left is not None and left > 0:
        if limit is not None and left <= limit:
            return NeedsHuman(
                False,
                f"recoverable error: retry {limit - left + 1} of {limit} first",
                "retry_first",
            )
        return NeedsHuman(
            False, f"recoverable error with {left} retries left: retry first", "retry_first"
        )
    if situation.repo_answers:
        return NeedsHuman(
            False, "the repo or brief already answers this: use that answer", "repo_answers"
        )
    if situation.trigger_type is None:
        return NeedsHuman(False, "no trigger fired: nothing to escalate", "no_trigger")
    if trigger is None:
        return NeedsHuman(
            False,
            f"design {design.name!r} v{design.version} has no trigger for "
            f"{situation.trigger_type.value}: routine, decide from the brief",
            "unlisted_trigger",
        )
    return _apply_trigger(situation.trigger_type, trigger, situation, left=left, limit=limit)


def _apply_trigger(
    trigger_type: TriggerType,
    trigger: Trigger,
    situation: Situation,
    *,
    left: int | None,
    limit: int | None,
) -> NeedsHuman:
    """Fire when every machine check the trigger configures holds; with none, on the run's word."""
    rule = f"triggers.{trigger_type.value}"
    facts: list[str] = []
    if trigger.counter is not None and trigger.threshold is not None:
        value = situation.counters.get(trigger.counter)
        at = f"{trigger_type.value} escalates at {_num(trigger.threshold)}"
        if value is None:
            return NeedsHuman(False, f"{trigger.counter} not reported ({at}): report it", rule)
        if value < trigger.threshold:
            return NeedsHuman(False, f"{trigger.counter} is {_num(value)}, {at}", rule)
        facts.append(f"{trigger.counter} is {_num(value)}, threshold {_num(trigger.threshold)}")
    if trigger.when_missing:
        named = [name for name in trigger.when_missing if name in situation.missing_inputs]
        if not named:
            wanted = ", ".join(trigger.when_missing)
            others = ", ".join(sorted(situation.missing_inputs))
            why = (
                f"{others} missing, but the design escalates only for {wanted}: decide from "
                "the brief"
                if others
                else f"none of {wanted} is missing"
            )
            return NeedsHuman(False, why, rule)
        facts.append(f"{', '.join(named)} {'is' if len(named) == 1 else 'are'} missing")
    if situation.recoverable and left == 0 and limit is not None:
        facts.append(f"all {limit} retries used")
    # Listed triggers with no machine check (harm_risk, permission_denied, conflicting
    # instructions, ...) are facts only the run can see, so its report is the test.
    detail = "; ".join(facts) or "raised by the run and listed in the design"
    return NeedsHuman(True, f"{trigger_type.value}: {detail} ({trigger.test})", rule)


def _retries(situation: Situation, trigger: Trigger | None) -> tuple[int | None, int | None]:
    """Retries left and the limit, from the situation or else the design's retry_limit."""
    limit = trigger.retry_limit if trigger is not None else None
    if situation.retries_left is not None:
        left = situation.retries_left
        if limit is None and "retries_used" in situation.counters:
            limit = left + int(situation.counters["retries_used"])
        return left, limit
    used = situation.counters.get("retries_used")
    if limit is None or used is None:
        return None, limit
    return max(limit - int(used), 0), limit


def _num(value: float) -> str:
    """Print 3.0 as 3 and 50.5 as 50.5."""
    return str(int(value)) if float(value).is_integer() else str(value)
