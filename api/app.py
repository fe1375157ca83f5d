"""The HTTP API: agents raise escalations, operators read and answer them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.body_limit import RequestBodyLimitMiddleware
from starlette.routing import Match, Route

from api.deps import NotSignedIn, SignInRequired
from api.openapi import build_spec
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
from api.statuses import UNAVAILABLE, on_error, on_invalid_body, on_unavailable
from api.tokens import Holder, load_holders
from models.migrate import upgrade
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
    app.add_exception_handler(StarletteHTTPException, _allow_every_method)

    faces = [
        health,
        metrics,
        escalations,
        handling,
        wakes,
        tasks,
        pipelines,
        inbound,
        links,
        dashboard,
    ]
    if settings.apprise_config is None:  # only then: the embedded demo's local channel
        faces.append(dev)
    for face in faces:
        app.include_router(face.router)
    # Every route as declared (the app's own list wraps each router's): what a 405 allows.
    app.state.declared = [route for face in faces for route in face.router.routes]

    app.openapi = lambda: _openapi_with_models(app, settings)  # type: ignore[method-assign]
    return app


def _start(settings: Settings, runtime: Runtime, holders: dict[str, Holder]) -> None:
    """Bring the schema up to date; end sign-ins of tokens no longer configured."""
    upgrade(settings)
    SignIns(runtime, holders).revoke_removed_tokens()


async def _allow_every_method(request: Request, error: Exception) -> Response:
    """A 405's Allow names every method the path takes: Starlette names only the first
    route's, and GET and POST on one path are two routes here."""
    assert isinstance(error, StarletteHTTPException)
    if error.status_code == 405:
        methods = {
            method
            for route in request.app.state.declared
            if isinstance(route, Route) and route.matches(request.scope)[0] != Match.NONE
            for method in route.methods or ()
        }
        error.headers = {**(error.headers or {}), "Allow": ", ".join(sorted(methods))}
    return await http_exception_handler(request, error)


async def _to_sign_in(_request: Request, _error: Exception) -> RedirectResponse:
    return RedirectResponse(dashboard.LOGIN, status_code=303)


async def _not_signed_in(_request: Request, _error: Exception) -> HTMLResponse:
    return page("answer.html", 403, title="Not decided", message="Sign in again.")


def _openapi_with_models(app: FastAPI, settings: Settings) -> dict[str, Any]:
    """The spec, built once (api/openapi.py)."""
    if app.openapi_schema is None:
        app.openapi_schema = build_spec(app, service_queue=settings.queue)
    return app.openapi_schema


def app_from_env() -> FastAPI:
    """`uvicorn --factory api.app:app_from_env`: the app built from ESCALATE_* settings."""
    return create_app(Settings())
