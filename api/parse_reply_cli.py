"""`escalate parse-reply`: how the reply grammar reads one reply, as JSON, with no server."""

from __future__ import annotations

from typing import Annotated

import typer

EXIT_DECIDES, EXIT_UNDECIDED, EXIT_BAD_INPUT = 0, 1, 2


def register(app: typer.Typer) -> None:
    """Add the `parse-reply` command to the `escalate` app."""

    @app.command("parse-reply")
    def parse_reply_command(
        text: Annotated[
            list[str], typer.Argument(metavar="TEXT", help="The reply; several words are joined.")
        ],
        option: Annotated[
            list[str] | None,
            typer.Option(
                "--option",
                help="An option label (repeatable). Default: approve, deny; none with --pipeline.",
            ),
        ] = None,
        pipeline: Annotated[
            bool, typer.Option("--pipeline", help="Also read the SPEC §6 commands.")
        ] = False,
        critical: Annotated[
            bool, typer.Option("--critical", help="A critical case: STOP needs confirming.")
        ] = False,
        destructive: Annotated[
            list[str] | None,
            typer.Option("--destructive", help="An option label or command needing a CONFIRM."),
        ] = None,
        allow: Annotated[
            list[str] | None,
            typer.Option("--allow", help="A command that may execute now (default: all)."),
        ] = None,
    ) -> None:
        """Print how a reply is understood: exit 0 if it decides, 1 if not, 2 on bad input."""
        import json

        from workflows.case import parse_options
        from workflows.replies import parse_reply

        try:
            options = parse_options(option) if option or not pipeline else ()
            match = parse_reply(
                " ".join(text),
                options,
                pipeline=pipeline,
                allowed_commands=allow,
                destructive=frozenset(destructive or ()),
                critical=critical,
            )
        except ValueError as error:
            typer.echo(f"error: {error}", err=True)
            raise typer.Exit(EXIT_BAD_INPUT) from None
        typer.echo(json.dumps(match.to_dict(), indent=2, ensure_ascii=False))
        raise typer.Exit(EXIT_DECIDES if match.decides else EXIT_UNDECIDED)
