"""The `escalate` command line: the app, its `check` command, and every other command mounted."""

from __future__ import annotations

from typing import Annotated

import typer

# Keep this module import-light: `escalate check` runs on every iteration of a shell loop.
# Commands that need the database, broker or web server import them inside their body;
# the other commands live in api/*_cli.py, one module per job, mounted below.

app = typer.Typer(
    name="escalate",
    help="Human-in-the-loop escalations for autonomous runs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.command()
def check(
    packet: Annotated[
        str | None, typer.Argument(help="Packet JSON file, or - for standard input.")
    ] = None,
    make_fixture: Annotated[
        bool, typer.Option("--make-fixture", help="Check the built-in incomplete example.")
    ] = False,
    make_valid: Annotated[
        bool, typer.Option("--make-valid", help="Check the built-in valid example.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    write: Annotated[
        str | None,
        typer.Option(
            "--write",
            metavar="FILE",
            help="With --make-fixture or --make-valid: also write that example to FILE.",
        ),
    ] = None,
) -> None:
    """Check an escalation packet (SPEC §1): exit 0 PASS, 1 FAIL, 2 unreadable."""
    # The console script runs api/check_cli.py directly; this entry keeps `escalate --help`
    # listing the command and serves callers that invoke the typer app.
    from api.check_cli import run_check

    raise typer.Exit(
        run_check(
            packet, make_fixture=make_fixture, make_valid=make_valid, as_json=as_json, write=write
        )
    )


def _mount_subcommands() -> None:
    """Add every command but `check`, in the order `escalate --help` lists them."""
    from api import cases_cli, login_cli, mcp_cli, raise_cli, service_cli, wait_cli
    from api.design_cli import design_app
    from api.hooks_cli import register as register_hooks
    from api.parse_reply_cli import register
    from api.pipeline_cli import register as register_pipelines
    from api.request_cli import register as register_requests

    app.command()(service_cli.serve)
    app.command()(service_cli.migrate)
    app.command("raise")(raise_cli.raise_)
    app.command()(login_cli.login)
    app.command()(cases_cli.reply)
    app.command("list")(cases_cli.list_)
    app.command()(cases_cli.show)
    app.command()(cases_cli.stats)
    app.command()(cases_cli.retry)
    app.command("wait")(wait_cli.wait_)
    app.command()(mcp_cli.mcp)
    app.command("telegram-poll")(service_cli.telegram_poll)
    app.command()(service_cli.inbox)
    register(app)
    register_requests(app)
    register_pipelines(app)
    register_hooks(app)
    app.add_typer(design_app, name="design", help="Validate design records (SPEC §2).")


_mount_subcommands()


def main() -> None:
    """Console-script entry point."""
    app()
