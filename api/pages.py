"""The HTML faces' one template environment, and the headers every page is sent with."""

from __future__ import annotations

from pathlib import Path

from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

TEMPLATES = Environment(
    loader=FileSystemLoader(Path(__file__).resolve().parent / "templates"),
    autoescape=select_autoescape(["html"]),
)

# The answer links' pages run no script and load nothing: their only style is inline (no
# user value is ever inside a <style>), forms post back to this site, no site may frame them.
# Answer links are credentials: no Referer carries one away, no cache keeps a page of one.
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
PAGE_PREFIXES = ("/dashboard", "/a/")
# The console runs one script of its own, from this origin only (no inline script, no CDN):
# it polls the queue fragment (api/static/console.js). The answer links' pages run none.
CONSOLE_HEADERS = {
    **PAGE_HEADERS,
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; connect-src 'self'; "
        "style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
}


def page(template: str, status: int = 200, **values: object) -> HTMLResponse:
    """A rendered template (autoescaped) with its status."""
    return HTMLResponse(TEMPLATES.get_template(template).render(**values), status)


class PageHeaders:
    """ASGI middleware: the dashboard's and the answer links' responses, whatever they are
    (a page, a redirect, a 404 or a 503), carry PAGE_HEADERS; everything else `nosniff`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        headers_for = CONSOLE_HEADERS if path.startswith("/dashboard") else PAGE_HEADERS
        is_page = path.startswith(PAGE_PREFIXES)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                if is_page:
                    headers.update(headers_for)
                headers.setdefault("X-Content-Type-Options", "nosniff")
            await send(message)

        await self.app(scope, receive, send_with_headers)
