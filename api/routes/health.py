"""`/healthz`: the design in force, or which dependency is down (503)."""

from __future__ import annotations

from fastapi import APIRouter, Response
from sqlalchemy import text

from api.deps import RuntimeDep
from api.schemas import Health
from api.statuses import UNAVAILABLE, unavailable_headers, unavailable_status
from workers.runtime import Runtime

router = APIRouter()
BROKER_TIMEOUT = 2.0  # seconds: a health check answers while the caller still waits


def _database_down(runtime: Runtime) -> str | None:
    try:
        with runtime.engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except UNAVAILABLE as error:
        return f"unreachable ({type(error).__name__})"
    return None


def _broker_down(runtime: Runtime) -> str | None:
    try:
        with runtime.app.connection_for_write() as connection:
            connection.ensure_connection(max_retries=1, timeout=BROKER_TIMEOUT)
    except UNAVAILABLE as error:
        return f"unreachable ({type(error).__name__})"
    return None


@router.get("/healthz")
def healthz(runtime: RuntimeDep, response: Response) -> Health:
    down = {
        name: problem
        for name, problem in (
            ("database", _database_down(runtime)),
            ("broker", _broker_down(runtime)),
        )
        if problem is not None
    }
    if down:
        response.status_code = unavailable_status()
        response.headers.update(unavailable_headers())
    return Health(
        status="unavailable" if down else "ok",
        design=runtime.design.name,
        design_version=runtime.design.version,
        down=down or None,
    )
