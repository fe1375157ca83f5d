"""The HTTP API: agents raise escalations, operators read and answer them."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import Body, Depends, FastAPI, Query, Request, Response, status
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from sqlalchemy import text
from sqlmodel import Session, col, select

from api.admin_routes import admin_router
from api.answer_routes import answer_router
from api.auth import load_tokens, require
from api.dashboard import dashboard_router
from api.pipeline_routes import pipeline_router
from api.statuses import on_error, status_of
from api.views import (
    answer_accepted,
    escalation_detail,
    escalation_summary,
    event_json,
    reply_json,
)
from models.migrate import upgrade
from models.packet import EscalationRequest
from models.settings import Settings
from models.store import decision_of
from models.tables import Delivery, Escalation, Event, Reply
from workers import blockers
from workers.answers import answer
from workers.app import make_celery
from workers.channels import dev_inbox_path
from workers.intake import accept
from workers.runtime import runtime_for
from workflows.errors import EscalationError, NotFound

log = logging.getLogger(__name__)


def _session(request: Request) -> Iterator[Session]:
    with Session(request.app.state.runtime.engine) as db:
        yield db


Db = Annotated[Session, Depends(_session)]
WAIT_POLL = 0.25  # seconds between SQL reads while a long-poll holds


def create_app(settings: Settings, *, migrate: bool = True) -> FastAPI:
    """The API bound to `settings`; the database is migrated when the app starts."""
    celery = make_celery(settings)
    runtime = runtime_for(celery)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if migrate:
            upgrade(settings)
        yield
        runtime.engine.dispose()

    app = FastAPI(title="agent-escalation", version="0.1.0", lifespan=lifespan)
    app.state.tokens = load_tokens(settings)
    app.state.runtime = runtime

    app.add_exception_handler(EscalationError, on_error)  # type: ignore[arg-type]

    app.include_router(answer_router(runtime))
    app.include_router(pipeline_router(runtime, public_url=settings.resolved_public_url))
    app.include_router(admin_router(runtime))
    public_url = settings.resolved_public_url
    app.include_router(dashboard_router(runtime, app.state.tokens, public_url=public_url))

    @app.get("/healthz")
    def healthz(db: Db) -> dict[str, Any]:
        db.execute(text("SELECT 1"))
        return {
            "status": "ok",
            "design": runtime.design.name,
            "design_version": runtime.design.version,
        }

    # The body is checked by our own rules (fixed error texts); the model documents it.
    request_schema = {
        "content": {
            "application/json": {
                "schema": EscalationRequest.model_json_schema(
                    ref_template="#/components/schemas/{model}"
                )
            }
        }
    }

    @app.post(
        "/v1/escalations",
        status_code=status.HTTP_201_CREATED,
        openapi_extra={"requestBody": request_schema},
    )
    def raise_escalation(
        response: Response,
        request: Annotated[
            dict[str, Any], Body(description="{packet, snapshot?, options?, wake?}")
        ],
        _role: Annotated[str, Depends(require("agent"))],
    ) -> dict[str, Any]:
        accepted = accept(runtime, request)
        return answer_accepted(runtime, accepted, response, public_url=settings.resolved_public_url)

    @app.get("/v1/escalations")
    def list_escalations(
        db: Db,
        _role: Annotated[str, Depends(require("agent", "operator"))],
        state: str | None = None,
        severity: str | None = None,
        run: str | None = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
    ) -> list[dict[str, Any]]:
        statement = select(Escalation).order_by(col(Escalation.created_at).desc()).limit(limit)
        for column, value in (
            (Escalation.state, state),
            (Escalation.severity, severity),
            (Escalation.run_id, run),
        ):
            if value is not None:
                statement = statement.where(column == value)
        return [escalation_summary(row) for row in db.exec(statement)]

    def get_row(db: Session, escalation_id: str) -> Escalation:
        row = db.get(Escalation, escalation_id)
        if row is None:
            raise NotFound(f"no escalation {escalation_id}")
        return row

    def read_detail(escalation_id: str) -> dict[str, Any]:
        with Session(runtime.engine) as db:
            row = get_row(db, escalation_id)
            deliveries = list(
                db.exec(
                    select(Delivery)
                    .where(Delivery.escalation_id == row.id)
                    .order_by(col(Delivery.id))
                )
            )
            return escalation_detail(row, decision_of(db, row.id), deliveries)

    @app.get("/v1/escalations/{escalation_id}")
    def get_escalation(
        escalation_id: str, _role: Annotated[str, Depends(require("agent", "operator"))]
    ) -> dict[str, Any]:
        return read_detail(escalation_id)

    @app.get("/v1/escalations/{escalation_id}/wait")
    async def wait_for_escalation(
        escalation_id: str,
        _role: Annotated[str, Depends(require("agent", "operator"))],
        hold: Annotated[float, Query(ge=0, le=55, description="seconds to hold")] = 25,
    ) -> dict[str, Any]:
        """Long-poll: answer as soon as the case is closed (or refused/parked), else after
        `hold` seconds with its current state, so a tool call that times out can wait again."""
        deadline = time.monotonic() + hold
        while True:
            detail = await run_in_threadpool(read_detail, escalation_id)
            done = detail["state"] in ("closed", "refused", "dead_letter")
            if done or time.monotonic() >= deadline:
                return {**detail, "waiting": not done}
            await asyncio.sleep(min(WAIT_POLL, max(0.0, deadline - time.monotonic())))

    @app.post("/v1/tasks/{task}/blockers", status_code=status.HTTP_201_CREATED)
    def link_blockers(
        task: str,
        response: Response,
        body: Annotated[dict[str, Any], Body(description='{"escalations": [ids], "wake": {...}}')],
        _role: Annotated[str, Depends(require("agent"))],
    ) -> dict[str, Any]:
        """Add these escalations to the task's one open set of blockers: it is woken once,
        when the last is resolved. 201 when a blocker was added, 200 when none was new."""
        linked = blockers.link(runtime, task, body.get("escalations"), body.get("wake"))
        if not linked["added"]:
            response.status_code = status.HTTP_200_OK
        return linked

    @app.get("/v1/tasks/{task}/blockers")
    def task_blockers(
        task: str, _role: Annotated[str, Depends(require("agent", "operator"))]
    ) -> dict[str, Any]:
        """The task's 'Decision needed' cards and whether it was woken."""
        return blockers.cards(runtime, task)

    @app.get("/v1/escalations/{escalation_id}/events")
    def get_events(
        escalation_id: str, db: Db, _role: Annotated[str, Depends(require("agent", "operator"))]
    ) -> dict[str, Any]:
        row = get_row(db, escalation_id)
        events = db.exec(select(Event).where(Event.escalation_id == row.id).order_by(col(Event.id)))
        replies = db.exec(
            select(Reply).where(Reply.escalation_id == row.id).order_by(col(Reply.id))
        )
        return {
            "id": row.id,
            "events": [event_json(e) for e in events],
            "replies": [reply_json(r) for r in replies],
        }

    @app.post("/v1/escalations/{escalation_id}/replies")
    def post_reply(
        escalation_id: str,
        body: Annotated[dict[str, Any], Body(description='{"option": ...} or {"text": ...}')],
        role: Annotated[str, Depends(require("operator"))],
    ) -> JSONResponse:
        option, reply_text = body.get("option"), body.get("text")
        if (
            not isinstance(option, str | None)
            or not isinstance(reply_text, str | None)
            or (option is None and not (reply_text or "").strip())
        ):
            return JSONResponse({"detail": 'send {"option": LABEL} or {"text": REPLY}'}, 422)
        # The token says who this is; a name the caller adds is kept, but cannot pose as
        # another identity (a design's deciders, the run's owner).
        named = body.get("sender")
        responder = f"api:{role}/{named}" if isinstance(named, str) and named else f"api:{role}"
        result = answer(
            runtime,
            escalation_id,
            option=option,
            text=reply_text,
            responder=responder,
            channel="api",
        )
        code = status_of(result)
        return JSONResponse(
            {
                "id": escalation_id,
                "outcome": result.outcome,
                "message": result.message,
                "option": result.option,
                "decision": result.decision,
            },
            code,
        )

    if settings.apprise_config is None:
        # Only with no real channels configured: the embedded demo's local channel.
        @app.post("/v1/dev/inbox", include_in_schema=False)
        def dev_inbox(body: Annotated[dict[str, Any], Body()]) -> dict[str, str]:
            """apprise posts here (json://); `escalate inbox` prints what arrived."""
            record = {"received_at": datetime.now(UTC).isoformat(), **body}
            with dev_inbox_path(settings).open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(record) + "\n")
            return {"status": "stored"}

    app.openapi = lambda: _openapi_with_models(app)  # type: ignore[method-assign]
    return app


def _openapi_with_models(app: FastAPI) -> dict[str, Any]:
    """The generated spec plus the request models our own checks stand in for."""
    if app.openapi_schema is None:
        from fastapi.openapi.utils import get_openapi

        spec = get_openapi(title=app.title, version=app.version, routes=app.routes)
        schema = EscalationRequest.model_json_schema(ref_template="#/components/schemas/{model}")
        components = spec.setdefault("components", {}).setdefault("schemas", {})
        components.update(schema.pop("$defs", {}))
        components["EscalationRequest"] = schema
        # The body is checked by our own rules (fixed error texts); the model documents it.
        spec["paths"]["/v1/escalations"]["post"]["requestBody"] = {
            "required": True,
            "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/EscalationRequest"}}
            },
        }
        app.openapi_schema = spec
    return app.openapi_schema


def app_from_env() -> FastAPI:
    """`uvicorn --factory api.app:app_from_env`: the app built from ESCALATE_* settings."""
    return create_app(Settings())
