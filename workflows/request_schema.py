"""The request file's shape and limits (SPEC §7): its fields, statuses and the checked value."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from workflows.vocabulary import Severity, TimeoutAction, TriggerType

# The mobile prompt form (SPEC §4): limits are refused with an error, never truncated.
PROMPT_MAX = 120
OPTIONS_MAX = 3
LABEL_MAX = 24
REQUEST_ID = re.compile(r"[0-9a-f]{12}")

# "Verb-led" (SPEC §4) without a dictionary: the label's first word must be on this list of
# imperatives an operator is asked to choose between. A first word ending in -ing or -ed
# ("Retrying", "Approved") is refused by name as a participle unless listed ("Proceed").
# Predictable beats clever here: a missing verb is one line to add, a false pass is a bad button.
_VERB_LIST = (
    "abort accept add allow approve archive ask back block bring buy bump call cancel change "
    "check choose clean clear close commit confirm continue copy create decline defer delete "
    "deny deploy disable discard do downgrade drop edit email enable escalate extend fail fetch "
    "fix flag force freeze give grant halt hold ignore increase install keep kill leave limit "
    "lock lower mark merge migrate move notify open override page patch pause pay pick pin "
    "postpone proceed publish pull purge push queue raise rebase rebuild reboot redo redeploy "
    "refund reject release reload remove rename reopen repair replace report request rerun reset "
    "restart restore resume retry return revert review revoke roll rotate run save scale select "
    "send set ship skip snooze split start stop switch take tell test trust try undo unlock "
    "update upgrade use verify wait wipe"
    # what a job-hunting run (JobClaw) asks to be done: "Solve captcha", "Submit anyway"
    " apply answer attach book decide enter fill find follow hire log message mute reply "
    "reschedule resend rewrite schedule share sign solve submit upload visit withdraw write"
)
VERBS = frozenset(_VERB_LIST.split())


def verb_problem(label: str) -> str | None:
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


class RequestStatus(StrEnum):
    OPEN = "open"
    RESOLVED = "resolved"
    EXPIRED = "expired"


# JobClaw's request-human-input schema, field for field, in its order ...
SEED_FIELDS = (
    "request_id",
    "created_at",
    "situation",
    "policy",
    "prompt",
    "options",
    "timeout_default",
    "context_refs",
    "status",
)
# ... and this service's own fields, kept apart under one key so JobClaw's stay as it wrote them.
EXTRA_KEY = "escalate"
EXTRA_FIELDS = (
    "trigger_type",
    "severity",
    "needs_human",
    "design",
    "escalation_id",
    "decision",
    "resolved_at",
    "replies",
)
FIELDS = (*SEED_FIELDS, *EXTRA_FIELDS)
DECISION_FIELDS = ("request_id", "option", "value", "matched_by", "raw_reply")
REPLY_FIELDS = ("at", "raw_reply", "kind", "reason", "outcome")
REPLY_OUTCOMES = ("decided", "recorded", "superseded")


@dataclass(frozen=True)
class RequestOption:
    """One button: a verb-led label and the value the run receives."""

    label: str
    value: str


@dataclass(frozen=True)
class TimeoutDefault:
    """What happens when nobody answers within `after_minutes`."""

    after_minutes: int
    action: TimeoutAction


@dataclass(frozen=True, kw_only=True)
class Request:
    """One request file, checked: build with compose() or parse_request(), write with to_dict()."""

    id: str
    created_at: datetime
    situation: str
    policy: str
    prompt: str
    options: tuple[RequestOption, ...]
    timeout_default: TimeoutDefault
    context_refs: tuple[str, ...]
    status: RequestStatus
    trigger_type: TriggerType
    severity: Severity
    needs_human: Mapping[str, str]  # {reason, rule} from compose mode
    design: Mapping[str, Any]  # {name, version, content_hash}: the design that decided
    escalation_id: str | None = None
    decision: Mapping[str, Any] | None = None
    resolved_at: datetime | None = None
    replies: tuple[Mapping[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The request as written to requests/<request_id>.json (examples/request.schema.json):
        JobClaw's fields, then this service's under "escalate"."""
        flat = self.to_flat()
        return {
            **{key: flat[key] for key in SEED_FIELDS},
            EXTRA_KEY: {key: flat[key] for key in EXTRA_FIELDS},
        }

    def to_flat(self) -> dict[str, Any]:
        """Every field at one level, as parse_request reads them."""
        return {
            "request_id": self.id,
            "created_at": self.created_at.isoformat(),
            "situation": self.situation,
            "policy": self.policy,
            "prompt": self.prompt,
            "options": [{"label": o.label, "value": o.value} for o in self.options],
            "timeout_default": {
                "after_minutes": self.timeout_default.after_minutes,
                "action": self.timeout_default.action.value,
            },
            "context_refs": list(self.context_refs),
            "status": self.status.value,
            "trigger_type": self.trigger_type.value,
            "severity": self.severity.value,
            "needs_human": dict(self.needs_human),
            "design": dict(self.design),
            "escalation_id": self.escalation_id,
            "decision": dict(self.decision) if self.decision is not None else None,
            "resolved_at": self.resolved_at.isoformat() if self.resolved_at else None,
            "replies": [dict(reply) for reply in self.replies],
        }
