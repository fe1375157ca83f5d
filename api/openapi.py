"""The OpenAPI document is the API: what FastAPI generates, made exact where our own checks
stand in for a model (the escalation request, the platforms' raw bodies), with the links a
client follows from a raised case to its reads and answers.

A request the document allows is one the service accepts (tests/security/test_schemathesis.py
checks it). Where a rule cannot be said in JSON Schema (a secret in the text, an address the
outbound allow-list refuses, two option labels equal but for case) the document says it in
words and the service answers 422 naming the field.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from api.statuses import declare_statuses
from models.packet import EscalationRequest
from workers.inbound import slack, telegram
from workflows.intake import QUEUE_NAME, WAKE_KEYS
from workflows.limits import (
    DETAIL_LIMIT,
    ENTRIES_LIMIT,
    ID_LIMIT,
    LABEL_LIMIT,
    PATH_LIMIT,
    REPLY_LIMIT,
    SENTENCE_LIMIT,
    SUMMARY_LIMIT,
    URL_LIMIT,
    WEBHOOK_LIMIT,
)

# Text a column can hold (no NUL), and text that is not blank besides (what "missing or
# empty" refuses). The service's strip() and these patterns' \s agree on what is blank.
STORABLE = r"^[^\u0000]*$"
FILLED = r"^[^\u0000]*[^\s\u0000][^\u0000]*$"
# One line of printable text (an option's label or value): the document says less than the
# service takes (any printable Unicode), because JSON Schema's regex has no \p{...} classes.
_PRINTED = r" -~\u00a1-\u00ac\u00ae-\u024f"  # ASCII and Latin letters, no soft hyphen
ONE_LINE = rf"^[{_PRINTED}]*[!-~\u00a1-\u00ac\u00ae-\u024f][{_PRINTED}]*$"
REF = "#/components/schemas/"
ABSOLUTE_FILE = 450  # wake.*_file: an absolute path of at most this (workflows/intake.py)


def text(limit: int, *, filled: bool = True, **extra: Any) -> dict[str, Any]:
    """A string of at most `limit` characters; not blank when `filled`."""
    return {
        "type": "string",
        "maxLength": limit,
        "pattern": FILLED if filled else STORABLE,
        **extra,
    }


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def texts(limit: int, *, least: int = 0) -> dict[str, Any]:
    return {"type": "array", "items": text(limit), "minItems": least, "maxItems": ENTRIES_LIMIT}


def build_spec(app: FastAPI, *, service_queue: str) -> dict[str, Any]:
    """The generated spec, with the escalation request documented as intake checks it."""
    spec = get_openapi(title=app.title, version=app.version, routes=app.routes)
    components = spec.setdefault("components", {}).setdefault("schemas", {})
    schema = EscalationRequest.model_json_schema(ref_template=REF + "{model}")
    components.update(schema.pop("$defs", {}))
    components["EscalationRequest"] = schema
    _exact_request(components, service_queue=service_queue)
    _exact_bodies(components, service_queue=service_queue)
    paths = spec["paths"]
    # The body is checked by our own rules (fixed error texts); the model documents it.
    paths["/v1/escalations"]["post"]["requestBody"] = _json_body("EscalationRequest")
    _document_platforms(paths)
    _optional_bearer(paths["/v1/wakes/{wake_id}/ack"]["post"])
    _link_cases(paths)
    return declare_statuses(spec)


def _json_body(model: str) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": {"$ref": REF + model}}}}


def _exact_request(components: dict[str, Any], *, service_queue: str) -> None:
    """Every rule of workflows/intake.py and packet_checks.py JSON Schema can say."""
    packet = components["Packet"]
    fields = packet["properties"]
    limits = {
        "packet_id": ID_LIMIT,
        "run_id": ID_LIMIT,
        "task_summary": SUMMARY_LIMIT,
        "trigger_detail": DETAIL_LIMIT,
        "blocked_on": SENTENCE_LIMIT,
        "requested_action": SENTENCE_LIMIT,
        "resume_condition": SENTENCE_LIMIT,
    }
    for name, limit in limits.items():
        fields[name] = text(limit, description=fields[name].get("description", name))
    fields["recipient"] = {**nullable(text(ID_LIMIT)), "description": "who decides"}
    fields["attempted"] = texts(SUMMARY_LIMIT, least=1)
    fields["completed"] = texts(SUMMARY_LIMIT)
    fields["remaining"] = texts(SUMMARY_LIMIT)
    fields["evidence"] = {
        "type": "array",
        "items": {"$ref": REF + "Evidence"},
        "minItems": 1,
        "maxItems": ENTRIES_LIMIT,
    }
    packet["additionalProperties"] = False
    # SPEC §1: critical waits paused or stopped (left out, the design's critical tier does).
    packet["anyOf"] = [
        {"properties": {"severity": {"enum": ["low", "medium", "high"]}}},
        {"properties": {"waiting_behavior": {"enum": ["paused", "stopped", None]}}},
    ]
    packet["description"] += (
        " No value may hold a secret (password, token, API key, private key, connection "
        "string with a password): the field and the kind are named in a 422."
    )
    evidence = components["Evidence"]
    evidence["properties"]["ref"] = text(SUMMARY_LIMIT, description="a link, path, test or log")
    evidence["additionalProperties"] = False
    components["OptionIn"] = _option()
    components["WakeIn"] = _wake(service_queue)
    components["Snapshot"] = _snapshot()
    request = components["EscalationRequest"]
    request["additionalProperties"] = False
    request["properties"].update(
        snapshot=nullable({"$ref": REF + "Snapshot"}),
        options={
            **nullable(
                {
                    "type": "array",
                    "items": {"anyOf": [{"$ref": REF + "OptionIn"}, _label()]},
                    "maxItems": ENTRIES_LIMIT,
                }
            ),
            "description": "answers on offer (default: approve, reject); labels unique "
            "ignoring case and surrounding spaces",
        },
        wake=nullable({"$ref": REF + "WakeIn"}),
        owner={
            **nullable(text(ID_LIMIT)),
            "description": request["properties"]["owner"].get("description", ""),
        },
    )


def _exact_bodies(components: dict[str, Any], *, service_queue: str) -> None:
    """The other bodies: what their routes refuse besides the model's own checks."""
    reply = components["ReplyCreate"]
    for name in ("option", "text", "sender"):
        reply["properties"][name]["pattern"] = STORABLE  # applies to the string branch
    reply["description"] += (
        " An option names one of the case's labels (else 422 unknown_option); a reply that"
        " holds a secret is withheld (422)."
    )
    reply["anyOf"] = [
        {"required": ["option"], "properties": {"option": {"type": "string"}}},
        {"required": ["text"], "properties": {"text": {"type": "string", "pattern": FILLED}}},
    ]
    inbound = components["InboundTextCreate"]
    for name in ("channel", "sender", "message_id"):
        inbound["properties"][name]["pattern"] = STORABLE
    inbound["properties"]["text"] = text(REPLY_LIMIT, description="starts with the case's code")
    inbound["required"] = ["text"]
    blockers = components["BlockersCreate"]
    blockers["properties"]["escalations"].update(minItems=1)
    blockers["properties"]["escalations"]["items"].update(minLength=1, pattern=STORABLE)
    wake = _wake(service_queue)
    wake["properties"] = {key: wake["properties"][key] for key in ("task", "queue", "webhook")}
    wake["anyOf"] = [
        {"required": ["task"]},
        {"required": ["webhook"], "not": {"required": ["queue"]}},
    ]
    blockers["properties"]["wake"] = {**wake, "description": "{task, queue?} and/or {webhook}"}
    blockers["required"] = ["escalations", "wake"]
    blockers["additionalProperties"] = False
    pipeline = components["PipelineEscalationCreate"]["properties"]
    for name in ("state_dir", "command_file"):
        pipeline[name]["pattern"] = r"^/[^\u0000]*$"  # absolute
    # the counters' key: a longer one is refused with its own line
    pipeline["pipeline_id"]["maxLength"] = ID_LIMIT
    for name in ("pipeline_id", "recipient"):
        pipeline[name]["pattern"] = FILLED
    pipeline["wake"] = nullable({"$ref": REF + "WakeIn"})


def _label() -> dict[str, Any]:
    return {"type": "string", "maxLength": LABEL_LIMIT, "pattern": ONE_LINE}


def _option() -> dict[str, Any]:
    label = _label()
    return {
        "title": "OptionIn",
        "type": "object",
        "description": "An answer the operator may give; `resumes` is false for stop-like values.",
        "properties": {
            "label": label,
            "value": {**label, "description": "what the run receives (default: the label)"},
            "description": text(SENTENCE_LIMIT, filled=False),
            "resumes": {"type": "boolean"},
            "destructive": {"type": "boolean", "description": "answering it needs CONFIRM"},
        },
        "required": ["label"],
        "additionalProperties": False,
    }


def _wake(service_queue: str) -> dict[str, Any]:
    files = {
        key: text(ABSOLUTE_FILE, pattern=r"^/[^\u0000]*$")
        for key in sorted(WAKE_KEYS)
        if key.endswith("_file")
    }
    return {
        "title": "WakeIn",
        "type": "object",
        "description": "How the run learns the decision: its Celery task (on its own queue), "
        "a webhook the outbound allow-list admits, files the service writes.",
        "properties": {
            "task": text(ID_LIMIT, description="Celery task sent wake={...} by name"),
            "queue": {
                "type": "string",
                "pattern": f"^{QUEUE_NAME.pattern}$",
                "not": {"enum": [service_queue]},
                "description": "the queue your worker consumes (default celery), never the "
                "service's own; needs task",
            },
            "webhook": text(
                WEBHOOK_LIMIT,
                pattern=r"^https?://[^\u0000]*$",
                description="URL POSTed the decision",
            ),
            **files,
        },
        # the queue is where the task is sent: no queue without a task
        "anyOf": [{"not": {"required": ["queue"]}}, {"required": ["task"]}],
        "additionalProperties": False,
    }


def _snapshot() -> dict[str, Any]:
    def fingerprint(kind: str, needed: str | None, limit: int = PATH_LIMIT) -> dict[str, Any]:
        properties: dict[str, Any] = {"kind": {"const": kind}}
        if needed is not None:
            properties[needed] = text(limit)
        return {
            "type": "object",
            "properties": properties,
            "required": ["kind", *([needed] if needed else [])],
            "additionalProperties": False,
        }

    return {
        "title": "Snapshot",
        "type": "object",
        "description": "The last verified good state and the fingerprint rechecked on close.",
        "properties": {
            "verified": text(SUMMARY_LIMIT, filled=False),
            "proof": text(SUMMARY_LIMIT, filled=False),
            "checked_at": text(LABEL_LIMIT, filled=False),
            "fingerprint": {
                "oneOf": [
                    fingerprint("none", None),
                    fingerprint("git", "path"),
                    fingerprint("file", "path"),
                    fingerprint("http", "url", URL_LIMIT),
                ]
            },
            "scheduled_task_ids": {
                "type": "array",
                "items": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": ID_LIMIT,
                    "pattern": STORABLE,
                },
                "maxItems": ENTRIES_LIMIT,
            },
        },
        "additionalProperties": False,
    }


def _document_platforms(paths: dict[str, Any]) -> None:
    """Slack, Telegram and ntfy post raw bodies we read ourselves: say what they carry."""
    paths["/v1/inbound/ntfy"]["post"]["requestBody"] = {
        "required": True,
        "content": {
            "text/plain": {
                "schema": {
                    "type": "string",
                    "maxLength": 500,  # ntfy.MAX_BODY is 2048 bytes: 500 characters always fit
                    "pattern": r"^\s*[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{10}\s+[^\s\u0000][^\u0000]*$",
                    "description": "'<code> <option>', as the button posts it",
                }
            }
        },
    }
    slack_post = paths["/v1/inbound/slack"]["post"]
    slack_post["parameters"] = [
        _header(slack.TIMESTAMP_HEADER, "Unix time the request was signed at"),
        _header(slack.SIGNATURE_HEADER, "v0=<hex HMAC-SHA256 of the body>"),
    ]
    slack_post["requestBody"] = {
        "required": True,
        "content": {
            "application/json": {"schema": {"type": "object"}},
            "application/x-www-form-urlencoded": {
                "schema": {"type": "object", "properties": {"payload": {"type": "string"}}}
            },
        },
    }
    telegram_post = paths["/v1/inbound/telegram"]["post"]
    telegram_post["parameters"] = [_header(telegram.SECRET_HEADER, "the webhook's secret_token")]
    telegram_post["requestBody"] = {
        "required": True,
        "content": {"application/json": {"schema": {"type": "object"}}},
    }


def _header(name: str, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "header",
        "required": True,
        "description": description,
        "schema": {"type": "string"},
    }


def _optional_bearer(operation: dict[str, Any]) -> None:
    """The wake ack takes a bearer token or the wake's own ack token: neither is required."""
    operation["security"] = [{"HTTPBearer": []}, {}]


def _link_cases(paths: dict[str, Any]) -> None:
    """From a raised case (its `id`) to every operation on it: stateful clients follow these."""
    by_id = {"escalation_id": "$response.body#/id"}
    targets = {
        "GetEscalation": ("/v1/escalations/{escalation_id}", "get"),
        "WaitForEscalation": ("/v1/escalations/{escalation_id}/wait", "get"),
        "GetEvents": ("/v1/escalations/{escalation_id}/events", "get"),
        "PostReply": ("/v1/escalations/{escalation_id}/replies", "post"),
        "RetryParked": ("/v1/escalations/{escalation_id}/retry", "post"),
    }
    links = {
        name: {"operationId": paths[path][method]["operationId"], "parameters": by_id}
        for name, (path, method) in targets.items()
    }
    for code, answer in paths["/v1/escalations"]["post"]["responses"].items():
        if code in ("200", "201"):
            answer["links"] = links
