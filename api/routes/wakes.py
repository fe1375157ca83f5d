"""A woken run says it took its decision: the proof that it resumed (README)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.security import HTTPAuthorizationCredentials

from api.auth import bearer, require
from api.deps import RuntimeDep
from api.limits import ID_LIMIT
from api.schemas import WakeAcknowledged
from models.store import iso
from workers.wake_acks import acknowledge
from workflows.wake_acks import ResumedVia

router = APIRouter()


@router.post("/v1/wakes/{wake_id}/ack")
def ack_wake(
    wake_id: Annotated[str, Path(max_length=ID_LIMIT)],
    request: Request,
    runtime: RuntimeDep,
    token: Annotated[
        str | None, Query(max_length=64, description="the ack.token the wake carried")
    ] = None,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)] = None,
) -> WakeAcknowledged:
    """The run took its decision and resumed; repeats change nothing. Authenticated by an
    agent or operator token, or by the token the wake itself carried."""
    if token is None:
        require("agent", "operator")(request, credentials)
    done = acknowledge(runtime, wake_id, via=ResumedVia.ACK, token=token)
    return WakeAcknowledged(
        wake_id=wake_id, resumed_at=iso(done["resumed_at"]), first=done["first"]
    )
