"""The HTTP API: agents raise escalations, operators read and answer them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.middleware.body_limit import RequestBodyLimitMiddleware

from api.auth import Holder, load_holders
from api.deps import NotSignedIn, SignInRequired
from api.pages import PageHeaders, page
from api.routes import (
    dashboard,
    dev,
    escalations,
    handling,
    health,
    inbound,
    links,
    metrics,
    pipelines,
    tasks,
    wakes,
)
from api.sessions import SignIns
from api.statuses import UNAVAILABLE, declare_statuses, on_error, on_invalid_body, on_unavailable
from models.migrate import upgrade
from models.packet import EscalationRequest
from models.settings import Settings
from workers.app import make_celery
from workers.inbound.dispatch import MissLimiter
from workers.runtime import Runtime, runtime_for
from workflows.errors import EscalationError


def create_app(settings: Settings, *, migrate: bool = True) -> FastAPI:
    """The API bound to `settings`; the database is migrated when the app starts."""
    runtime = runtime_for(make_celery(settings))
    holders = load_holders(settings)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if migrate:
            _start(settings, runtime, holders)
        yield
        runtime.engine.dispose()

    app = FastAPI(title="agent-escalation", version="0.1.0", lifespan=lifespan)
    app.state.runtime = runtime
    app.state.holders = holders
    app.state.limiter = MissLimiter()

    # FastAPI 0.163 has no max_body_size of its own (0.165 does); Starlette's middleware is
    # what it would install. Outermost but for the headers, so a 413 carries them too.
    app.add_middleware(RequestBodyLimitMiddleware, max_body_size=settings.max_body_size)
    app.add_middleware(PageHeaders)

    app.add_exception_handler(EscalationError, on_error)  # type: ignore[arg-type]
    for unavailable in UNAVAILABLE:
        app.add_exception_handler(unavailable, on_unavailable)
    app.add_exception_handler(RequestValidationError, on_invalid_body)
    app.add_exception_handler(SignInRequired, _to_sign_in)
    app.add_exception_handler(NotSignedIn, _not_signed_in)

    faces = (health, metrics, escalations, handling, wakes, tasks, pipelines, inbound, links)
    for face in (*faces, dashboard):
        app.include_router(face.router)
    if settings.apprise_config is None:  # only then: the embedded demo's local channel
        app.include_router(dev.router)

    app.openapi = lambda: _openapi_with_models(app)  # type: ignore[method-assign]
    return app


def _start(settings: Settings, runtime: Runtime, holders: dict[str, Holder]) -> None:
    """Bring the schema up to date; end sign-ins of tokens no longer configured."""
    upgrade(settings)
    SignIns(runtime, holders).revoke_removed_tokens()


async def _to_sign_in(_request: Request, _error: Exception) -> RedirectResponse:
    return RedirectResponse(dashboard.LOGIN, status_code=303)


async def _not_signed_in(_request: Request, _error: Exception) -> HTMLResponse:
    return page("answer.html", 403, title="Not decided", message="Sign in again.")


def _openapi_with_models(app: FastAPI) -> dict[str, Any]:
    """The generated spec plus the request models our own checks stand in for."""
    if app.openapi_schema is None:
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
        app.openapi_schema = declare_statuses(spec)
    return app.openapi_schema


def app_from_env() -> FastAPI:
    """`uvicorn --factory api.app:app_from_env`: the app built from ESCALATE_* settings."""
    return create_app(Settings())
