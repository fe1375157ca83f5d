"""Request files (SPEC §7): composed only when a human is needed, checked against the schema."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator, FormatChecker

from api.request_schema_file import COMMAND, request_json_schema
from models.design_file import load_design
from workflows.design import Design
from workflows.errors import RequestInvalid
from workflows.packet_checks import check_packet
from workflows.request_parsing import parse_request
from workflows.request_schema import (
    EXTRA_FIELDS,
    EXTRA_KEY,
    FIELDS,
    LABEL_MAX,
    OPTIONS_MAX,
    PROMPT_MAX,
    SEED_FIELDS,
    Request,
    RequestStatus,
)
from workflows.requests import compose, first_sentence, packet_for, resolve, situation_from_inputs
from workflows.vocabulary import Severity, TimeoutAction, TriggerType

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SCHEMA: dict[str, Any] = json.loads((EXAMPLES / "request.schema.json").read_text())
NOW = datetime(2026, 10, 16, 9, 30, tzinfo=UTC)
HARM = (
    "The next step drops the orders_archive table, which has no backup. "
    "Run 8841 is paused before it."
)


# The published file checked as a client checks it; date-time by the same reading as ours
# (jsonschema leaves the format unchecked without an extra package).
_FORMATS = FormatChecker()
_FORMATS.checks("date-time", raises=ValueError)(
    lambda text: not isinstance(text, str) or datetime.fromisoformat(text).tzinfo is not None
)
VALIDATOR = Draft202012Validator(SCHEMA, format_checker=_FORMATS)


def schema_errors(instance: object) -> list[str]:
    """Each place request.schema.json refuses `instance`, with the keyword that refused it."""
    errors = sorted(VALIDATOR.iter_errors(instance), key=lambda e: list(map(str, e.path)))
    return [f"$.{'.'.join(map(str, e.path))}: {e.validator}" for e in errors]


@pytest.fixture(scope="module")
def design() -> Design:
    # Tiers: medium 1h window (timeout 2h) -> queue, high 15m/1h -> retry; harm_risk listed.
    return load_design(EXAMPLES / "design.yaml")


def _compose(design: Design, situation: str = HARM, **parts: Any) -> Request:
    trigger = parts.pop("trigger", "harm_risk")
    facts = situation_from_inputs(situation, trigger=trigger, counters=parts.pop("counters", ()))
    composed = compose(
        design,
        facts,
        policy=parts.pop("policy", "Dropping data without a backup needs a human."),
        request_id="0a1b2c3d4e5f",
        now=NOW,
        **parts,
    )
    assert composed.request is not None, composed.verdict
    return composed.request


@pytest.fixture
def request_(design: Design) -> Request:
    return _compose(
        design,
        options=["Drop the table=drop", "Keep it=keep", "Back up first=backup"],
        context_refs=["logs/run-8841.txt"],
    )


def test_given_a_harm_risk_situation_when_composed_then_the_request_fits_its_schema(
    request_: Request,
) -> None:
    # When
    data = request_.to_dict()
    # Then
    assert schema_errors(data) == []
    # JobClaw's schema field for field, in its order; this service's fields kept apart
    assert list(data) == [
        "request_id", "created_at", "situation", "policy", "prompt", "options",
        "timeout_default", "context_refs", "status", "escalate",
    ]  # fmt: skip
    assert data["request_id"] == "0a1b2c3d4e5f"
    assert data["created_at"] == "2026-10-16T09:30:00+00:00"
    assert data["status"] == "open"
    # the default prompt is the question itself, asked about the situation
    assert data["prompt"] == (
        "The next step drops the orders_archive table, which has no backup: "
        "Drop the table, Keep it or Back up first?"
    )
    assert data["options"][2] == {"label": "Back up first", "value": "backup"}
    ours = data["escalate"]
    # harm_risk files as high and aborts on timeout, whatever the high tier's default (retry).
    assert (ours["severity"], data["timeout_default"]) == (
        "high",
        {"after_minutes": 60, "action": "abort"},
    )
    assert ours["needs_human"]["rule"] == "triggers.harm_risk"
    assert ours["design"]["name"] == "example"
    assert (ours["escalation_id"], ours["decision"], ours["replies"]) == (None, None, [])


def test_given_no_options_or_timeout_when_composed_then_the_tier_and_defaults_fill_them(
    design: Design,
) -> None:
    # Given a cost_risk over threshold: medium tier, 1h window so a 2h timeout, queue
    request = _compose(
        design,
        "Projected spend is $72.50 against a $50 cap. Continue the batch?",
        trigger="cost_risk",
        counters=["spend_usd=72.5"],
    )
    # Then
    assert [(o.label, o.value) for o in request.options] == [
        ("Approve", "approve"),
        ("Deny", "deny"),
    ]
    assert request.severity is Severity.HIGH
    assert request.timeout_default.after_minutes == 60
    assert request.timeout_default.action is TimeoutAction.RETRY


@pytest.mark.parametrize(
    ("situation", "rule"),
    [
        pytest.param(
            situation_from_inputs(
                "Rename a helper.", trigger="conflicting_instructions", case="naming"
            ),
            "never_escalate:routine-style",
            id="never-escalate",
        ),
        pytest.param(
            situation_from_inputs("Spend is $20.", trigger="cost_risk", counters=["spend_usd=20"]),
            "triggers.cost_risk",
            id="under-threshold",
        ),
        pytest.param(situation_from_inputs("All fine."), "no_trigger", id="no-trigger"),
    ],
)
def test_given_a_routine_situation_when_composed_then_no_request_and_the_reason(
    design: Design, situation: Any, rule: str
) -> None:
    # When
    composed = compose(design, situation, policy="p", request_id="0a1b2c3d4e5f", now=NOW)
    # Then
    assert composed.request is None
    assert composed.verdict.needs_human is False
    assert composed.verdict.rule == rule
    assert composed.verdict.reason


@pytest.mark.parametrize(
    ("parts", "problem"),
    [
        pytest.param(
            {"prompt": "x" * (PROMPT_MAX + 1)},
            f"prompt: {PROMPT_MAX + 1} characters, at most {PROMPT_MAX}",
            id="prompt-too-long",
        ),
        pytest.param(
            {"prompt": "Drop it?\nReally?"},
            "prompt: must be one line of printable text",
            id="prompt-two-lines",
        ),
        pytest.param(
            {"options": ["Approve", "Deny", "Skip", "Retry"]},
            f"options: 4 given, 1 to {OPTIONS_MAX} allowed",
            id="four-options",
        ),
        pytest.param(
            {"options": ["Approve the whole migration"]},
            f"options[0].label: 27 characters, at most {LABEL_MAX}",
            id="label-too-long",
        ),
        pytest.param(
            {"options": ["Yes=approve"]},
            "options[0].label: 'Yes' must lead with a verb: 'yes' is not on the verb list",
            id="label-not-verb",
        ),
        pytest.param(
            {"options": ["Retrying later"]},
            "options[0].label: 'Retrying later' must lead with an imperative verb, not 'retrying'",
            id="label-gerund",
        ),
        pytest.param(
            {"options": ["Approved"]},
            "options[0].label: 'Approved' must lead with an imperative verb, not 'approved'",
            id="label-past",
        ),
        pytest.param(
            {"options": ["Approve=a", "approve=b"]},
            "options: two options share a label (labels ignore case)",
            id="duplicate-labels",
        ),
        pytest.param(
            {"options": ["=drop"]}, "options[0].label: must be non-empty text", id="blank-label"
        ),
        pytest.param(
            {"timeout_minutes": 0},
            "timeout_default.after_minutes: must be more than 0, got 0",
            id="zero-minutes",
        ),
        pytest.param(
            {"timeout_action": "later"},
            "timeout_default.action: 'later' is not one of skip, queue, retry, abort",
            id="bad-action",
        ),
        pytest.param(
            {"timeout_action": "skip"},
            "timeout_default.action: harm_risk steps are irreversible, so the timeout default "
            "must be abort (SPEC §2), got 'skip'",
            id="harm-risk-must-abort",
        ),
        pytest.param(
            {"context_refs": ["  "]}, "context_refs[0]: must be non-empty text", id="blank-ref"
        ),
    ],
)
def test_given_a_limit_broken_when_composed_then_an_error_names_the_field_and_limit(
    design: Design, parts: dict[str, Any], problem: str
) -> None:
    # When
    with pytest.raises(RequestInvalid) as refused:
        _compose(design, **parts)
    # Then: refused, never truncated
    assert any(line.startswith(problem) for line in refused.value.problems), refused.value


def test_given_limits_met_exactly_when_composed_then_accepted(design: Design) -> None:
    # Given a 120-character prompt, three 24-character labels, "Proceed" (ends in -ed, a verb)
    labels = ["Proceed " + "x" * 16, "Keep " + "y" * 19, "Use backup " + "z" * 13]
    # When
    request = _compose(design, prompt="q" * PROMPT_MAX, options=labels)
    # Then
    assert len(request.prompt) == PROMPT_MAX
    assert [len(o.label) for o in request.options] == [LABEL_MAX] * 3
    assert schema_errors(request.to_dict()) == []


def test_given_a_long_first_sentence_and_no_prompt_when_composed_then_told_to_give_one(
    design: Design,
) -> None:
    # When
    with pytest.raises(RequestInvalid) as refused:
        _compose(design, "word " * 40 + "ends here?")
    # Then
    assert refused.value.problems == [
        "prompt: 210 characters, at most 120 (shorten it; it is not cut) "
        "(asked from the situation's first sentence: give a prompt)"
    ]


def test_given_a_secret_in_the_situation_when_composed_then_refused_without_the_value(
    design: Design,
) -> None:
    # Given
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    # When
    with pytest.raises(RequestInvalid) as refused:
        _compose(design, f"Deploy failed with token {secret}. Drop the table?")
    # Then
    assert any(line.startswith("situation: contains a secret") for line in refused.value.problems)
    assert secret not in str(refused.value)


@pytest.mark.parametrize(
    ("inputs", "problem"),
    [
        ({"description": " "}, "situation: must not be empty"),
        ({"trigger": "urgent"}, "trigger_type: 'urgent' is not one of blocked, uncertain"),
        ({"counters": ["spend_usd"]}, "counters: 'spend_usd' is not NAME=NUMBER"),
        ({"counters": ["spend_usd=lots"]}, "counters: 'spend_usd=lots' is not NAME=NUMBER"),
        ({"counters": ["=3"]}, "counters: '=3' is not NAME=NUMBER"),
    ],
)
def test_given_bad_compose_inputs_when_mapped_to_a_situation_then_refused_by_name(
    inputs: dict[str, Any], problem: str
) -> None:
    # When
    description = inputs.pop("description", "Something happened.")
    with pytest.raises(RequestInvalid) as refused:
        situation_from_inputs(description, **inputs)
    # Then
    assert refused.value.problems[0].startswith(problem)


def test_given_compose_inputs_when_mapped_then_a_situation() -> None:
    # When
    situation = situation_from_inputs(
        " Deploy is missing a region. ",
        trigger="MISSING_INPUT",
        counters=["retries_used=2"],
        missing=["DEPLOY_REGION", " "],
        case="Deploy",
    )
    # Then
    assert situation.trigger_type is TriggerType.MISSING_INPUT
    assert dict(situation.counters) == {"retries_used": 2.0}
    assert situation.missing_inputs == {"DEPLOY_REGION"}
    assert (situation.case, situation.description) == ("deploy", "Deploy is missing a region.")


def test_given_a_written_request_when_read_back_then_it_is_the_same_request(
    request_: Request,
) -> None:
    # When
    again = parse_request(json.loads(json.dumps(request_.to_dict())))
    # Then
    assert again == request_


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda d: d.pop("policy"), "policy: missing"),
        (lambda d: d.update(colour="red"), "colour: unknown field"),
        (
            lambda d: d.update(request_id="../../etc/pa"),
            "request_id: '../../etc/pa' is not 12 lowercase hex",
        ),
        (lambda d: d.update(created_at="2026-10-16T09:30:00"), "created_at: must be an ISO 8601"),
        (lambda d: d.update(options=[]), "options: 0 given, 1 to 3 allowed"),
        (lambda d: d["timeout_default"].update(after_minutes=True), "timeout_default.after_minu"),
        (lambda d: d.update(status="done"), "status: 'done' is not one of open, resolved, expired"),
        (lambda d: d.update(status="resolved"), "decision: a resolved request must carry"),
        (lambda d: d.update(resolved_at=NOW.isoformat()), "decision: a request that is open"),
        (lambda d: d.update(escalation_id=""), "escalation_id: must be non-empty text or null"),
        (lambda d: d["design"].update(version="3"), "design.version: must be a whole number"),
        (lambda d: d.update(replies=[{"at": "x"}]), "replies[0]: must be an object with at"),
    ],
)
def test_given_a_damaged_file_when_read_then_refused_naming_the_field(
    request_: Request, change: Any, problem: str
) -> None:
    # Given a file as written before JobClaw's layout (flat): read the same way
    data = request_.to_flat()
    change(data)
    # When
    with pytest.raises(RequestInvalid) as refused:
        parse_request(data)
    # Then
    assert any(line.startswith(problem) for line in refused.value.problems), refused.value


def test_given_schema_and_code_when_compared_then_they_state_the_same_limits() -> None:
    # Then
    properties = SCHEMA["properties"]
    assert SCHEMA["required"] == [*SEED_FIELDS, EXTRA_KEY]
    assert properties[EXTRA_KEY]["required"] == list(EXTRA_FIELDS)
    assert [*SEED_FIELDS, *EXTRA_FIELDS] == list(FIELDS)
    assert properties["prompt"]["maxLength"] == PROMPT_MAX
    assert properties["options"]["maxItems"] == OPTIONS_MAX
    assert properties["options"]["items"]["properties"]["label"]["maxLength"] == LABEL_MAX
    assert properties["status"]["enum"] == [s.value for s in RequestStatus]
    assert properties["timeout_default"]["properties"]["action"]["enum"] == [
        a.value for a in TimeoutAction
    ]
    assert properties[EXTRA_KEY]["properties"]["trigger_type"]["enum"] == [
        t.value for t in TriggerType
    ]


def test_given_a_file_over_its_limits_when_checked_by_the_schema_then_it_fails(
    request_: Request,
) -> None:
    # Given
    data = request_.to_dict()
    data["prompt"] = "x" * 121
    data["options"].append({"label": "Wait", "value": "wait"})
    data["timeout_default"]["after_minutes"] = 0
    # Then
    assert schema_errors(data) == [
        "$.options: maxItems",
        "$.prompt: maxLength",
        "$.timeout_default.after_minutes: exclusiveMinimum",
    ]


def test_given_the_request_schema_when_generated_then_it_is_the_committed_file() -> None:
    # When
    generated = request_json_schema()
    # Then
    committed = (EXAMPLES / "request.schema.json").read_text(encoding="utf-8")
    assert committed == generated, f"examples/request.schema.json is stale: run `{COMMAND}`"


def _verb_line(label: str) -> str:
    return (
        f"{label!r} must lead with a verb: {label.casefold()!r} is not on the verb list "
        "(e.g. Approve, Deny, Retry, Skip, Use, Keep; VERBS in workflows/request_schema.py)"
    )


@pytest.mark.parametrize(
    ("change", "problems"),
    [
        pytest.param(
            lambda d: (d.pop("policy"), d.update(colour="red", escalate=[])),
            ["policy: missing", "colour: unknown field", "escalate: unknown field"],
            id="fields-first-and-alone",
        ),
        pytest.param(
            lambda d: d.update(
                options=[
                    {"label": "Yes", "value": " "},
                    {"label": "No"},
                    {"label": "No", "value": "n"},
                ]
            ),
            [
                "options[0].value: must be non-empty text",
                "options[1].value: missing",
                "options[2].label: " + _verb_line("No"),
            ],
            id="a-label-judged-once-its-option-is-whole",
        ),
        pytest.param(
            lambda d: d.update(options=[{"label": "Keep", "value": "k"}] * 2 + ["Deny"] * 2),
            [
                "options: 4 given, 1 to 3 allowed",
                "options[2]: must be an object with label, value",
                "options[3]: must be an object with label, value",
                "options: two options share a label (labels ignore case)",
            ],
            id="count-entries-then-duplicates",
        ),
        pytest.param(
            lambda d: d.update(prompt="x" * 121 + "\ny"),
            [
                "prompt: must be one line of printable text",
                "prompt: 123 characters, at most 120 (shorten it; it is not cut)",
            ],
            id="prompt-both-limits",
        ),
        pytest.param(
            lambda d: d.update(timeout_default={"after_minutes": 0, "action": " "}),
            ["timeout_default.action: must be non-empty text"],
            id="timeout-limits-wait-for-its-shape",
        ),
        pytest.param(
            lambda d: d.update(replies=[{"at": "x", "raw_reply": 3}], resolved_at="later"),
            [
                "resolved_at: must be an ISO 8601 time with a UTC offset, got 'later'",
                "replies[0]: must be an object with at, raw_reply, kind, reason, outcome",
                "decision: a request that is open carries no decision or resolved_at",
            ],
            id="reply-keys-as-one-line",
        ),
        pytest.param(
            lambda d: d["design"].update(version=0, content_hash="abc"),
            [
                "design.version: must be more than 0, got 0",
                "design.content_hash: 'abc' is not 64 lowercase hex characters",
            ],
            id="design-cited-exactly",
        ),
        pytest.param(
            lambda d: d.update(status="resolved", decision={"request_id": "0a1b2c3d4e5f"}),
            [
                "decision.option: missing",
                "decision.value: missing",
                "decision.matched_by: missing",
                "decision.raw_reply: missing",
                "decision: a resolved request must carry its decision and resolved_at",
                "decision.option: None is not one of "
                "['Drop the table', 'Keep it', 'Back up first']",
            ],
            id="decision-shape-then-its-rules",
        ),
    ],
)
def test_given_a_bad_file_when_read_then_exactly_these_problems_in_this_order(
    request_: Request, change: Any, problems: list[str]
) -> None:
    # Given
    data = request_.to_flat()
    change(data)
    # When
    with pytest.raises(RequestInvalid) as refused:
        parse_request(data)
    # Then
    assert refused.value.problems == problems


@pytest.mark.parametrize(
    ("reply", "option", "matched_by"),
    [
        ("Keep it", "Keep it", "exact"),
        ("backup", "Back up first", "exact"),
        ("keep it, thanks", "Keep it", "prefix"),
        ("Kep it", "Keep it", "fuzzy"),
    ],
)
def test_given_a_deciding_reply_when_resolved_then_the_structured_decision(
    request_: Request, reply: str, option: str, matched_by: str
) -> None:
    # When
    resolution = resolve(request_, reply, now=NOW + timedelta(minutes=5))
    # Then
    assert resolution.decided
    value = next(o.value for o in request_.options if o.label == option)
    assert resolution.request.decision == {
        "request_id": "0a1b2c3d4e5f",
        "option": option,
        "value": value,
        "matched_by": matched_by,
        "raw_reply": reply,
    }
    written = resolution.request.to_dict()
    ours = written["escalate"]
    assert (written["status"], ours["resolved_at"]) == ("resolved", "2026-10-16T09:35:00+00:00")
    assert ours["replies"][0]["outcome"] == "decided"
    assert schema_errors(written) == []
    assert parse_request(written) == resolution.request
    assert resolution.to_dict()["option"] == option


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("why would we drop it?", "question"),
        ("don't drop the table", "negated"),
        ("hmm, let me look", "no_match"),
    ],
)
def test_given_a_reply_that_decides_nothing_when_resolved_then_open_and_recorded(
    request_: Request, reply: str, reason: str
) -> None:
    # When
    resolution = resolve(request_, reply, now=NOW)
    # Then
    assert not resolution.decided
    assert resolution.request.status is RequestStatus.OPEN
    assert resolution.request.decision is None
    assert resolution.request.replies[-1]["outcome"] == "recorded"
    assert resolution.request.replies[-1]["reason"] == reason
    assert resolution.note.startswith("request 0a1b2c3d4e5f stays open: ")
    assert "Drop the table, Keep it, Back up first" in resolution.note
    assert resolution.to_dict()["option"] is None
    assert schema_errors(resolution.request.to_dict()) == []


def test_given_a_resolved_request_when_another_reply_comes_then_superseded(
    request_: Request,
) -> None:
    # Given
    first = resolve(request_, "Keep it", now=NOW).request
    # When
    later = resolve(first, "Drop the table", now=NOW + timedelta(minutes=1))
    # Then: the first deciding reply wins
    assert not later.decided
    assert later.request.decision == first.decision
    assert [r["outcome"] for r in later.request.replies] == ["decided", "superseded"]
    assert "already resolved (Keep it)" in later.note


def test_given_a_destructive_option_when_answered_then_it_needs_confirm(
    request_: Request,
) -> None:
    # When
    plain = resolve(request_, "Drop the table", now=NOW, destructive={"Drop the table"})
    confirmed = resolve(
        plain.request, "CONFIRM drop the table", now=NOW, destructive={"Drop the table"}
    )
    # Then
    assert not plain.decided
    assert plain.request.replies[-1]["reason"] == "needs_confirmation"
    assert confirmed.decided
    assert confirmed.request.decision is not None
    assert confirmed.request.decision["matched_by"] == "confirm"


def test_given_a_secret_in_a_reply_when_resolved_then_refused_and_nothing_recorded(
    request_: Request,
) -> None:
    # When
    with pytest.raises(RequestInvalid) as refused:
        resolve(request_, "Keep it, password=hunter2xyz!", now=NOW)
    # Then
    assert refused.value.problems[0].startswith("reply: contains a secret")
    assert "hunter2" not in str(refused.value)


def test_given_a_request_when_filed_then_its_packet_passes_the_packet_checks(
    design: Design, request_: Request
) -> None:
    # When
    packet = packet_for(request_, design, run_id="requests", request_path="requests/x.json")
    # Then
    result = check_packet(packet)
    assert result.passed, result.error_lines()
    assert not result.warnings
    assert packet["packet_id"] == "req-0a1b2c3d4e5f"
    assert packet["task_summary"] == first_sentence(HARM)
    assert (packet["recipient"], packet["waiting_behavior"]) == ("oncall", "paused")
    assert packet["evidence"] == [
        {"kind": "artifact", "ref": "requests/x.json"},
        {"kind": "artifact", "ref": "logs/run-8841.txt"},
    ]
    assert packet["requested_action"] == packet["blocked_on"] == request_.prompt
