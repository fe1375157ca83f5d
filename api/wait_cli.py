"""`escalate wait`: block until a case is decided, exit with what the run does next."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from api.blocked_cli import unblock_locally
from api.cli_common import call, fail, make_client

if TYPE_CHECKING:
    from api.client import Escalations

EXIT_RESUME, EXIT_STOP, EXIT_TIMED_OUT = 0, 3, 4


def wait_and_exit(
    client: Escalations,
    escalation_id: str,
    timeout: float | None,
    *,
    unblock: bool = False,
    blocked_file: str | None = None,
) -> None:
    """Wait for the decision and print it as JSON; exit 0 resume, 3 stop/abort, 4 timed out."""
    case = call(lambda: client.wait(escalation_id, timeout=timeout))
    if case is None:
        typer.echo(json.dumps({"id": escalation_id, "state": "waiting", "timed_out": True}))
        raise typer.Exit(EXIT_TIMED_OUT)
    typer.echo(
        json.dumps(
            {
                "id": case["id"],
                "state": case["state"],
                "outcome": case.get("outcome"),
                "decision": case.get("decision"),
            },
            indent=2,
        )
    )
    if unblock:
        _unblock_after_wait(client, case, blocked_file)
    raise typer.Exit(
        EXIT_RESUME if case.get("outcome") in ("resume", "reconcile_first") else EXIT_STOP
    )


def _unblock_after_wait(
    client: Escalations, case: dict[str, Any], blocked_file: str | None
) -> None:
    """`wait --unblock`: the decision onto this disk; exit 1 if the disk refuses."""
    import os
    from pathlib import Path

    path = Path(
        os.path.abspath(
            blocked_file or (case.get("wake") or {}).get("blocked_file") or "BLOCKED.md"
        )
    )
    if case["state"] != "closed":
        typer.echo(
            f"warning: case {case['id']} is {case['state']}, no decision: {path} left in place",
            err=True,
        )
        return
    try:
        note = unblock_locally(client, case, path)
    except OSError as exc:
        raise fail(f"cannot unblock {path}: {exc}") from None
    if note:
        typer.echo(f"warning: {note}", err=True)
    else:
        typer.echo(f"unblocked: {path} is gone; the decision is in DECISION.md beside it", err=True)


def wait_(
    escalation_id: Annotated[str, typer.Argument(help="Escalation id.")],
    timeout: Annotated[float | None, typer.Option(help="Give up after SECONDS (exit 4).")] = None,
    unblock: Annotated[
        bool,
        typer.Option(
            "--unblock",
            help="Then remove BLOCKED.md and write DECISION.md and decisions.log beside it "
            "(for a service that cannot reach this disk); exit 1 if the disk refuses.",
        ),
    ] = False,
    blocked_file: Annotated[
        str | None,
        typer.Option(
            "--blocked-file",
            "--blocked-file-path",
            help="BLOCKED.md to remove (implies --unblock; default: the case's, or ./BLOCKED.md).",
        ),
    ] = None,
) -> None:
    """Block until decided; print it as JSON. Exit 0 resume, 3 stop/abort, 4 timed out."""
    wait_and_exit(
        make_client(),
        escalation_id,
        timeout,
        unblock=unblock or blocked_file is not None,
        blocked_file=blocked_file,
    )
