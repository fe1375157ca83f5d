"""`escalate serve|migrate|telegram-poll|inbox`: run the service on this machine, read its inbox."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from api.cli_common import fail, load_settings


def serve() -> None:
    """Run API, worker and beat on the embedded defaults (SQLite in $ESCALATE_HOME)."""
    from api.serve import claim, supervise
    from api.tokens import load_tokens
    from models.design_file import load_design
    from models.migrate import upgrade
    from workflows.errors import DesignError

    settings = load_settings()
    try:
        design = load_design(settings.design_path)
    except DesignError as exc:
        raise fail(str(exc)) from None
    claimed = claim(settings)  # before any banner or token: one serve per home and port
    if isinstance(claimed, str):
        raise fail(claimed)
    if settings.apprise_config is not None:
        from workers.channel_check import unusable_tags
        from workers.channels import ChannelBook
        from workers.runtime import design_tags

        problems = unusable_tags(
            ChannelBook(settings.apprise_config), settings.apprise_config, design_tags(design)
        )
        if problems:
            raise fail("refusing to start: " + "\n".join(problems))
    upgrade(settings)
    tokens = {role: token for token, role in load_tokens(settings).items()}
    typer.echo(f"agent-escalation: starting (state in {settings.home.resolve()}) ...")

    def ready() -> None:
        """The banner, printed once the API answers: its URL works when it is shown."""
        typer.echo(
            f"agent-escalation on http://{settings.host}:{settings.port}  "
            f"(state in {settings.home.resolve()})"
        )
        typer.echo(
            f"dashboard: {settings.resolved_public_url}/dashboard (sign in with the operator token)"
        )
        typer.echo(f"design: {settings.design_path} ({design.name} v{design.version})")
        typer.echo(f"database: {settings.resolved_database_url}")
        typer.echo(f"broker: {settings.resolved_broker_url}")
        if not settings.api_tokens:
            typer.echo(
                "tokens (generated, also in tokens.json): "
                + ", ".join(f"{role}={token}" for role, token in sorted(tokens.items()))
            )
        typer.echo(
            f"from any other folder: escalate login --url {settings.resolved_public_url} "
            f"--home {settings.home.resolve()}"
        )
        if settings.public_url is None:
            typer.echo(
                f"warning: ESCALATE_PUBLIC_URL is not set: answer links in notifications "
                f"point at {settings.resolved_public_url}, which only this machine can open"
            )
        typer.echo(
            "runs' webhooks and http probes: public addresses"
            + (f" and {settings.outbound_allow}" if settings.outbound_allow else " only")
            + " (ESCALATE_OUTBOUND_ALLOW)"
        )
        if settings.apprise_config is None:
            typer.echo(
                "channels: none configured (ESCALATE_APPRISE_CONFIG); notifications go to "
                "the local inbox: run `escalate inbox`"
            )

    raise typer.Exit(supervise(settings, announce=typer.echo, ready=ready))


def migrate() -> None:
    """Bring the database to the newest schema (serve and the API do this on start)."""
    from models.migrate import upgrade

    upgrade(load_settings())
    typer.echo("database is up to date")


def telegram_poll() -> None:
    """Take Telegram replies by long polling (for setups with no public URL); runs until ^C."""
    from workers.app import make_celery
    from workers.inbound.dispatch import MissLimiter, poll_telegram_once
    from workers.inbound.telegram import TelegramPoller
    from workers.runtime import runtime_for
    from workflows.errors import EscalationError

    settings = load_settings()
    if not settings.telegram_bot_token:
        raise fail("set ESCALATE_TELEGRAM_BOT_TOKEN (the bot's token from @BotFather)")
    runtime = runtime_for(make_celery(settings))
    limiter = MissLimiter()
    typer.echo("polling Telegram for replies (Ctrl-C stops)")
    with TelegramPoller(settings.telegram_bot_token, api_url=settings.telegram_api_url) as poller:
        while True:
            for result in poll_telegram_once(runtime, poller, limiter):
                if isinstance(result, EscalationError):
                    typer.echo(f"refused: {result}")
                else:
                    typer.echo(f"{result.outcome} {result.escalation_id}: {result.message}")


def inbox(
    last: Annotated[int, typer.Option(help="Show the last N notifications.")] = 5,
) -> None:
    """Print what the embedded local channel received (when no apprise config is set)."""
    from workers.channels import dev_inbox_path

    path = dev_inbox_path(load_settings())
    if not path.exists():
        typer.echo("the local inbox is empty")
        return
    lines = path.read_text(encoding="utf-8").splitlines()[-last:]
    for line in lines:
        note = json.loads(line)
        typer.echo(f"=== {note.get('received_at', '')[:19]}  {note.get('title', '')}")
        typer.echo(note.get("message", ""))
        typer.echo("")
