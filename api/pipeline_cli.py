"""`escalate pipeline raise|counters`: a pipeline's escalation from its state folder (SPEC §6)."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Annotated

import typer

from api.run_outcome import Exit, exit_code, wait_view

if TYPE_CHECKING:
    from api.client import Escalations


pipeline_app = typer.Typer(
    name="pipeline",
    help="Pipelines (SPEC §6): escalate from the state folder, read the reset counters.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Mount `pipeline raise` and `pipeline counters` on the `escalate` app."""
    app.add_typer(pipeline_app, name="pipeline")


def _absolute(path: str | None) -> str | None:
    return os.path.abspath(path) if path else None


@pipeline_app.command(
    "raise",
    epilog="Prints the case as JSON: id, offered commands, advisory, files read. With --wait, "
    "then prints the chosen command; exit 0 for a command a person chose, 3 for a person's "
    "STOP, 4 defaulted (nobody answered: STOP), 5 reconcile first, 6 parked or refused "
    "(nothing to run until it is retried), 7 still pending. Exit 1 when the folder is "
    "refused (each problem on stderr) or the service is unreachable.",
)
def raise_command(
    state_dir: Annotated[
        str,
        typer.Option(help="Folder with phase_state.json and the optional state files."),
    ],
    pipeline_id: Annotated[
        str | None,
        typer.Option(help="Names the pipeline (default: phase_state.json, else the folder)."),
    ] = None,
    severity: Annotated[str, typer.Option(help="low, medium, high or critical.")] = "high",
    recipient: Annotated[str | None, typer.Option(help="Who decides.")] = None,
    command_file: Annotated[
        str | None,
        typer.Option(help="Where the service writes the chosen command as JSON when it closes."),
    ] = None,
    wait: Annotated[
        bool, typer.Option("--wait", help="Block until a command is chosen, then print it.")
    ] = False,
    timeout: Annotated[float | None, typer.Option(help="With --wait: give up after SECONDS.")] = (
        None
    ),
) -> None:
    """File the escalation: the service reads the folder and writes escalation_summary.json."""
    from api.cli_common import call, make_client

    client = make_client()
    case = call(
        lambda: client.raise_pipeline(
            _absolute(state_dir) or state_dir,  # an empty one is refused by the service
            pipeline_id=pipeline_id,
            severity=severity,
            recipient=recipient,
            command_file=_absolute(command_file),
        )
    )
    typer.echo(json.dumps(case, indent=2))
    if wait:
        _wait_for_command(client, case["id"], timeout)


def _wait_for_command(client: Escalations, escalation_id: str, timeout: float | None) -> None:
    from api.cli_common import call

    case = call(lambda: client.wait(escalation_id, timeout=timeout))
    if case is None:
        typer.echo(json.dumps(wait_view(case, escalation_id)))
        raise typer.Exit(Exit.PENDING)
    command = (case.get("pipeline") or {}).get("command")
    view = wait_view(case, escalation_id)
    typer.echo(json.dumps({**view, "command": command}))
    if case["state"] != "closed" or command is None:
        # Parked before its close entry (no recheck yet), or refused: nothing to run now.
        typer.echo(
            f"error: case {case['id']} is {case['state']}, not closed: run no command; "
            f"`escalate retry {case['id']}` once its cause is fixed",
            err=True,
        )
        raise typer.Exit(Exit.NO_DECISION)
    raise typer.Exit(exit_code(case))


@pipeline_app.command("counters")
def counters_command(
    pipeline_id: Annotated[str, typer.Option(help="The pipeline's name.")],
    phase: Annotated[str, typer.Option(help="The phase.")],
) -> None:
    """Resets the service has counted for one phase, and the commands it would offer now."""
    from api.cli_common import call, make_client

    client = make_client()
    counted = call(lambda: client.pipeline_counters(pipeline_id, phase))
    typer.echo(json.dumps(counted, indent=2))
