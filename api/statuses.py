"""The one table from the service's errors and reply outcomes to HTTP statuses."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse

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


def error_body(error: EscalationError) -> dict[str, Any]:
    if isinstance(error, PacketRefused):
        return {"detail": "packet refused", "errors": error.problems}
    if isinstance(error, InboundRejected):
        return {"detail": error.reason}
    return {"detail": str(error)}


async def on_error(_request: Request, error: EscalationError) -> JSONResponse:
    """The app's handler for every error of ours that reaches a route's edge."""
    return JSONResponse(error_body(error), status_of_error(error))
