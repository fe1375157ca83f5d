"""The HTML faces' one template environment."""

from __future__ import annotations

from pathlib import Path

from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape

TEMPLATES = Environment(
    loader=FileSystemLoader(Path(__file__).resolve().parent / "templates"),
    autoescape=select_autoescape(["html"]),
)


def page(template: str, status: int = 200, **values: object) -> HTMLResponse:
    """A rendered template (autoescaped) with its status."""
    return HTMLResponse(TEMPLATES.get_template(template).render(**values), status)
