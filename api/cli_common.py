"""What the `escalate` commands share: settings, a client for the service, its errors as exits."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import typer

# Imported by every command module, so kept as light as api/cli.py: heavy imports go inside
# (the types below are for the checker only).
if TYPE_CHECKING:
    from api.client import Escalations
    from models.settings import Settings

T = TypeVar("T")


def load_settings() -> Settings:
    """The settings from the environment (ESCALATE_*), read when a command needs them."""
    from models.settings import Settings

    return Settings()


def make_client() -> Escalations:
    """A client for ESCALATE_URL with ESCALATE_TOKEN, or the local server's generated token."""
    import os

    from api.auth import load_tokens
    from api.client import Escalations

    settings = load_settings()
    url = os.environ.get("ESCALATE_URL", f"http://{settings.host}:{settings.port}")
    token = os.environ.get("ESCALATE_TOKEN")
    if not token:  # on the server's own machine: the strongest configured or generated token
        by_role = {role: value for value, role in load_tokens(settings).items()}
        token = next((by_role[r] for r in ("admin", "operator", "agent") if r in by_role), "")
    return Escalations(url, token)


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print `error: MESSAGE` on stderr and return the exit to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def call(action: Callable[[], T]) -> T:
    """Run one client call; a refusal or an unreachable service exits 1 with its reasons."""
    from api.client import ClientError

    try:
        return action()
    except ClientError as exc:
        detail = exc.detail
        if isinstance(detail, dict):
            lines = detail.get("errors") or [detail.get("detail", detail)]
            raise fail("\n  ".join(str(line) for line in lines)) from None
        raise fail(str(exc)) from None
