"""The one table from the service's errors and reply outcomes to HTTP statuses.

Besides our own error tree: a database or broker that cannot be reached is a 503 with
Retry-After (never a 500), and a body that fails its model is a 422 that names the field
without echoing the value back.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from kombu.exceptions import OperationalError as BrokerError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeout
from sqlalchemy.exc import InterfaceError, OperationalError, SQLAlchemyError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from workers.answers import Answer
from workflows.errors import (
    Conflict,
    EscalationError,
    InboundRejected,
    LinkRefused,
    NotFound,
    PacketRefused,
    Rejection,
    RetryableError,
    Throttled,
)
from workflows.judgement import ReplyOutcome

log = logging.getLogger(__name__)

# Most specific first: the first class the error is an instance of gives its status.
ERROR_STATUS: tuple[tuple[type[EscalationError], int], ...] = (
    (NotFound, 404),
    (Conflict, 409),
    (LinkRefused, 403),
    (Throttled, 429),
    (RetryableError, 503),
)
REJECTION_STATUS = {Rejection.NOT_GENUINE: 401, Rejection.UNREADABLE: 400}

OUTCOME_STATUS = {
    ReplyOutcome.DECIDED: 200,
    ReplyOutcome.COMMENT: 200,
    ReplyOutcome.NEEDS_CONFIRMATION: 200,
    ReplyOutcome.DUPLICATE: 200,
    ReplyOutcome.ACKNOWLEDGED: 200,
    # Did not decide because of the case (or the words could mean two answers): 409.
    ReplyOutcome.AMBIGUOUS: 409,
    ReplyOutcome.SUPERSEDED: 409,
    ReplyOutcome.TOO_EARLY: 409,
    # The responder may not decide this case (the design's responder policy): 403.
    ReplyOutcome.NOT_ALLOWED: 403,
    # Refused because of the reply itself (over_cap: a §6 cap is spent): 422.
    ReplyOutcome.UNKNOWN_OPTION: 422,
    ReplyOutcome.WITHHELD: 422,
    ReplyOutcome.OVER_CAP: 422,
}


def status_of_error(error: EscalationError) -> int:
    """The status for an error of ours; anything else we refused on purpose is a 422."""
    if isinstance(error, InboundRejected):
        return REJECTION_STATUS[error.why]
    return next((code for kind, code in ERROR_STATUS if isinstance(error, kind)), 422)


def status_of(result: Answer) -> int:
    """The status a reply's outcome answers with."""
    return OUTCOME_STATUS[result.outcome]


# A dependency that cannot be reached (or is locked, or has no free connection): try again.
UNAVAILABLE: tuple[type[Exception], ...] = (
    OperationalError,
    InterfaceError,
    PoolTimeout,
    BrokerError,
    RedisConnectionError,
    RedisTimeout,
)
UNAVAILABLE_STATUS = 503
RETRY_AFTER_SECONDS = 5


def unavailable_status() -> int:
    return UNAVAILABLE_STATUS


def unavailable_headers() -> dict[str, str]:
    return {"Retry-After": str(RETRY_AFTER_SECONDS)}


def error_body(error: EscalationError) -> dict[str, Any]:
    if isinstance(error, PacketRefused):
        return {"detail": "packet refused", "errors": error.problems}
    if isinstance(error, InboundRejected):
        return {"detail": error.reason}
    return {"detail": str(error)}


async def on_error(_request: Request, error: EscalationError) -> JSONResponse:
    """The app's handler for every error of ours that reaches a route's edge."""
    code = status_of_error(error)
    headers = unavailable_headers() if code == UNAVAILABLE_STATUS else None
    return JSONResponse(error_body(error), code, headers=headers)


def dependency_of(error: Exception) -> str:
    """Which dependency an UNAVAILABLE error is about."""
    return "database" if isinstance(error, SQLAlchemyError) else "broker"


async def on_unavailable(_request: Request, error: Exception) -> JSONResponse:
    """The handler for UNAVAILABLE errors: 503, Retry-After, and which dependency."""
    which = dependency_of(error)
    # The class only: a driver's message may quote the statement and its values.
    log.warning("%s unavailable: %s", which, type(error).__name__)
    return JSONResponse(
        {"detail": f"the {which} is unavailable; try again shortly"},
        UNAVAILABLE_STATUS,
        headers=unavailable_headers(),
    )


async def on_invalid_body(_request: Request, error: Exception) -> JSONResponse:
    """FastAPI's 422 for a body, query or path that fails its model, minus the offending
    value: an over-long field is named, not sent back."""
    assert isinstance(error, RequestValidationError)
    fields = [
        {"type": e.get("type"), "loc": list(e.get("loc", ())), "msg": e.get("msg")}
        for e in error.errors()
    ]
    return JSONResponse({"detail": fields}, 422)


# What every error answer carries (our handler, HTTPException, the body check, an outage).
ERROR_SCHEMA: dict[str, Any] = {
    "title": "ErrorBody",
    "type": "object",
    "properties": {
        "detail": {"description": "what was refused: a line, or the fields by name"},
        "errors": {"type": "array", "items": {"type": "string"}},
        "down": {"type": "object"},
    },
    "required": ["detail"],
}
# Statuses any operation may answer besides its own: the error tree's, an outage's, the
# body cap's; plus 401/403 where a token is required.
EVERY_OPERATION = sorted(
    {code for _, code in ERROR_STATUS} | set(REJECTION_STATUS.values()) | {413, 422, 503}
)


def declare_statuses(spec: dict[str, Any]) -> dict[str, Any]:
    """Add to every operation of an OpenAPI spec each status this table can give it."""
    components = spec.setdefault("components", {}).setdefault("schemas", {})
    components["ErrorBody"] = ERROR_SCHEMA
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
    for operations in spec.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            codes = [*EVERY_OPERATION, *([401, 403] if operation.get("security") else [])]
            for code in codes:
                if str(code) == "422" or str(code) not in responses:
                    # our 422 names fields ({"detail": [...]}), not FastAPI's default shape
                    responses[str(code)] = {"description": "refused", "content": error}
    return spec
