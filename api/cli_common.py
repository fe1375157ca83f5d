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


def make_client(roles: tuple[str, ...] = ("admin", "operator", "agent")) -> Escalations:
    """A client for the service, found from any folder: ESCALATE_URL and ESCALATE_TOKEN, else
    what `escalate login` saved, else the tokens a local service generated in its home. It
    never generates tokens or a state folder itself; with none found it exits 1 saying how."""
    import os

    from api.client import Escalations
    from api.login_cli import local_tokens, saved_login

    settings = load_settings()
    saved = saved_login()
    local_url = f"http://{settings.host}:{settings.port}"
    url = os.environ.get("ESCALATE_URL") or saved.get("url") or local_url
    token = os.environ.get("ESCALATE_TOKEN") or ""
    if not token and saved.get("url") == url:  # a saved token goes only to its own service
        token = saved.get("token", "")
    if not token and url == local_url:  # on the server's own machine: the first of `roles`
        by_role = local_tokens(settings)
        token = next((by_role[r] for r in roles if r in by_role), "")
    if not token:
        raise fail(
            f"no token for {url}: set ESCALATE_URL and ESCALATE_TOKEN, or run "
            "`escalate login --url URL --token TOKEN` once (or `escalate login --home "
            "PATH` on the service's machine)"
        )
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
