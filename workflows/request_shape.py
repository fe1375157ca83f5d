"""The request file's shape (SPEC §7), one pydantic-core schema for parse_request and the
published JSON Schema (examples/request.schema.json, written by api/request_schema_file.py).

Its leaves (workflows/request_leaves.py) word their own refusals in the SPEC's lines.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pydantic_core import SchemaValidator

from workflows.request_leaves import (
    LIMIT,
    any_text,
    choice,
    hex_digits,
    list_of,
    members,
    nullable,
    record,
    text,
    timestamp,
    whole,
)
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
__all__ = ["LIMIT", "VALIDATOR", "request_schema"]


def _verb_led(label: str) -> list[str]:
    problem = verb_problem(label)
    return [problem] if problem else []


def _shapes() -> dict[str, CoreSchema]:
    """Every field's schema, in FIELDS order (the order problems are reported in)."""
    option = record(
        {
            "label": text(
                limit=LABEL_MAX,
                one_line=True,
                then=_verb_led,
                description=f"Verb-led button text, at most {LABEL_MAX} characters.",
            ),
            "value": text(description="What the run receives when this option is chosen."),
        }
    )
    reply = record(
        {
            "at": timestamp(),
            "raw_reply": any_text("must be text"),
            "kind": any_text("must be text or null", nullable=True),
            "reason": any_text("must be text or null", nullable=True),
            "outcome": choice(REPLY_OUTCOMES),
        },
        exact=True,
    )
    hex_id = {"type": "str", "pattern": f"^{REQUEST_ID.pattern}$"}
    return {
        "request_id": text(
            then=hex_digits(REQUEST_ID, "12 lowercase hex characters"),
            documented=hex_id,
            description="12 lowercase hex characters (given with --request-id, else "
            "generated); the file is named <request_id>.json.",
        ),
        "created_at": timestamp("ISO 8601 with a UTC offset."),
        "situation": text(description="What the run reported, in its words."),
        "policy": text(description="The policy the run applied, as it stated it."),
        "prompt": text(
            limit=PROMPT_MAX,
            one_line=True,
            description=f"The one-line question (mobile form: at most {PROMPT_MAX} characters).",
        ),
        "options": list_of(
            option,
            "must be a list of {label, value}",
            documented={"minItems": 1, "maxItems": OPTIONS_MAX},
        ),
        "timeout_default": record(
            {
                "after_minutes": whole(above=0),
                "action": choice(members(TimeoutAction), text_first=True),
            }
        ),
        "context_refs": list_of(text(one_line=True), "must be a list of text"),
        "status": choice(members(RequestStatus)),
        "trigger_type": choice(members(TriggerType)),
        "severity": choice(members(Severity)),
        "needs_human": record(
            {"reason": text(stripped=False), "rule": text(stripped=False)},
            description="Compose mode's answer: why a human is needed and which design rule "
            "said so.",
        ),
        "design": record(
            {
                "name": text(stripped=False),
                "version": whole(above=0),
                "content_hash": text(
                    stripped=False,
                    then=hex_digits(CONTENT_HASH, "64 lowercase hex characters"),
                    documented={"type": "str", "pattern": f"^{CONTENT_HASH.pattern}$"},
                ),
            },
            description="The design record that decided, cited exactly.",
        ),
        "escalation_id": nullable(
            text(stripped=False),
            "must be non-empty text or null",
            description="The filed escalation; null when not filed (offline, or filing failed).",
        ),
        # Its request_id must be this request's (request_parsing), so it is 12 hex characters.
        "decision": nullable(
            record(
                {
                    name: text(stripped=False, documented=hex_id if name == "request_id" else None)
                    for name in DECISION_FIELDS
                }
            )
        ),
        "resolved_at": nullable(timestamp()),
        "replies": list_of(reply, "must be a list"),
    }


def request_schema(*, nested: bool = False) -> CoreSchema:
    """The request's core schema: flat, as parse_request reads it, or `nested` as the file is
    written (JobClaw's fields, then this service's under "escalate")."""
    shapes = _shapes()
    if not nested:
        return record(shapes)
    ours = record(
        {name: shapes[name] for name in EXTRA_FIELDS},
        description="This service's own fields, kept apart from JobClaw's request fields: the "
        "needs-human verdict, the design, the filed escalation, the decision and every reply.",
    )
    return record(
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
