"""`escalate wait`: block until a case is decided, exit with what the run does next."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from api.blocked_cli import unblock_locally
from api.cli_common import call, fail, make_client
from api.run_outcome import exit_code, wait_view

if TYPE_CHECKING:
    from api.client import Escalations


def wait_and_exit(
    client: Escalations,
    escalation_id: str,
    timeout: float | None,
    *,
    unblock: bool = False,
    blocked_file: str | None = None,
) -> None:
    """Wait for the outcome and print it as JSON; exit by the README's table (Exit)."""
    case = call(lambda: client.wait(escalation_id, timeout=timeout))
    typer.echo(json.dumps(wait_view(case, escalation_id), indent=2))
    if case is not None and unblock:
        _unblock_after_wait(client, case, blocked_file)
    raise typer.Exit(exit_code(case))


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
    timeout: Annotated[
        float | None, typer.Option(help="Give up after SECONDS (exit 7; wait again later).")
    ] = None,
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
    """Block until decided; print it as JSON. Exit 0 resume, 3 stopped, 4 defaulted,
    5 reconcile first, 6 no decision (refused, parked, cancelled), 7 still pending."""
    wait_and_exit(
        make_client(),
        escalation_id,
        timeout,
        unblock=unblock or blocked_file is not None,
        blocked_file=blocked_file,
    )
