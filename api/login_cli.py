"""`escalate login`: remember the service and a token in the user's config folder, so every
`escalate` command finds them from any folder (a shell loop's repo, a pipeline's project)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from models.settings import Settings

ROLES = ("admin", "operator", "agent")


def config_dir() -> Path:
    """$XDG_CONFIG_HOME/escalate, else ~/.config/escalate (the XDG base directory rule)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "escalate"


def credentials_file() -> Path:
    return config_dir() / "credentials.json"


def saved_login() -> dict[str, str]:
    """{url, token} as `escalate login` saved them; empty when it never ran."""
    try:
        saved = json.loads(credentials_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(saved, dict):
        return {}
    return {k: v for k, v in saved.items() if k in ("url", "token") and isinstance(v, str)}


def local_tokens(settings: Settings) -> dict[str, str]:
    """A local service's tokens by role, from its settings or its home; none are made."""
    from api.tokens import parse_tokens
    from models.state_files import existing_api_tokens

    if settings.api_tokens:
        return {role: token for token, role in parse_tokens(settings.api_tokens).items()}
    return existing_api_tokens(settings.home)


def login(
    url: Annotated[
        str | None, typer.Option(help="The service's URL (default: ESCALATE_URL, else local).")
    ] = None,
    token: Annotated[
        str | None, typer.Option(help="A bearer token (default: ESCALATE_TOKEN, else --home).")
    ] = None,
    home: Annotated[
        str | None,
        typer.Option(help="On the service's machine: its state folder, to take a token from."),
    ] = None,
    role: Annotated[str, typer.Option(help="With --home: admin, operator or agent.")] = "admin",
) -> None:
    """Check a token against the service and save both (0600) in the user's config folder."""
    from api.cli_common import fail, load_settings
    from api.client import ClientError, Escalations

    settings = load_settings()
    if home:
        settings = settings.model_copy(update={"home": Path(home), "api_tokens": None})
    url = url or os.environ.get("ESCALATE_URL") or f"http://{settings.host}:{settings.port}"
    token = token or os.environ.get("ESCALATE_TOKEN")
    if not token:
        if role not in ROLES:
            raise fail(f"--role must be one of {', '.join(ROLES)}, not {role!r}")
        token = local_tokens(settings).get(role)
        if not token:
            raise fail(
                f"no {role} token found in {settings.home}/tokens.json; give --token, or --home "
                "with the folder `escalate serve` printed"
            )
    with Escalations(url, token) as client:
        try:
            client.get("login-check")
        except ClientError as exc:
            if exc.status != 404:  # 404: the token was accepted, the case does not exist
                raise fail(
                    f"{url} did not accept the token: HTTP {exc.status} {exc.detail}"
                ) from None
    from models.state_files import write_private

    write_private(credentials_file(), json.dumps({"url": url, "token": token}, indent=2) + "\n")
    typer.echo(f"saved {url} and its token in {credentials_file()}")
