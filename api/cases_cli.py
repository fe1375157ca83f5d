"""`escalate reply|list|show|stats|retry`: answer, read and recover cases on a running service."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from api.cli_common import call, make_client


def reply(
    escalation_id: Annotated[str, typer.Argument(help="Escalation id.")],
    text: Annotated[list[str], typer.Argument(help="The reply, e.g. approve.")],
    as_option: Annotated[bool, typer.Option("--option", help="TEXT is an option label.")] = False,
    sender: Annotated[str | None, typer.Option(help="Who is answering.")] = None,
) -> None:
    """Answer an escalation; exit 0 when it decided, 1 when it was recorded without deciding."""
    import getpass

    words = " ".join(text)
    client = make_client()
    who = sender or f"cli:{getpass.getuser()}"
    result = call(
        lambda: client.reply(
            escalation_id,
            option=words if as_option else None,
            text=None if as_option else words,
            sender=who,
        )
    )
    typer.echo(result["message"])
    raise typer.Exit(0 if result["outcome"] == "decided" else 1)


def list_(
    state: Annotated[str | None, typer.Option(help="Only this state.")] = None,
    severity: Annotated[str | None, typer.Option(help="Only this severity.")] = None,
    run: Annotated[str | None, typer.Option(help="Only this run.")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """List escalations, newest first."""
    client = make_client()
    rows = call(lambda: client.list(state=state, severity=severity, run=run))
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("id", "state", "severity", "run", "question", "created")
    for row in rows:
        table.add_row(
            row["id"],
            row["state"],
            row["severity"],
            row["run_id"],
            (row.get("question") or "")[:60],
            (row.get("created_at") or "")[:19],
        )
    Console().print(table)


def show(
    escalation_id: Annotated[str, typer.Argument(help="Escalation id.")],
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Show one escalation and its events as a timeline."""
    client = make_client()
    case = call(lambda: client.get(escalation_id))
    history = call(lambda: client.events(escalation_id))
    if as_json:
        typer.echo(json.dumps({**case, **history}, indent=2))
        return
    typer.echo(
        f"{case['id']}  {case['state']}  {case['severity']}  run {case['run_id']}  "
        f"packet {case['packet_id']}"
    )
    if case.get("question"):
        typer.echo(f"Q: {case['question']}")
    for event in history["events"]:
        detail = ", ".join(
            f"{k}={v}" for k, v in event["detail"].items() if v not in (None, [], "")
        )
        typer.echo(f"  {event['at'][:19]}  {event['kind']:<18} {detail}"[:240])
    for item in history["replies"]:
        typer.echo(
            f"  {item['at'][:19]}  reply ({item['outcome']}) from {item['sender']}: {item['text']}"[
                :240
            ]
        )
    if case.get("decision"):
        d = case["decision"]
        typer.echo(
            f"decision: {d['option']} by {d['decided_by']}"
            f"{' (default)' if d['is_default'] else ''}; outcome {case.get('outcome')}"
        )


def stats() -> None:
    """Cases by state, the oldest open one, parked (dead_letter) cases, deliveries by state,
    cases decided but not resumed.

    Exit 0, or 1 when a case is parked or decided but not resumed: a monitor can run it.
    """
    client = make_client()
    counts = call(client.stats)
    typer.echo(json.dumps(counts, indent=2))
    raise typer.Exit(1 if counts["dead_letter"] or counts["decided_not_resumed"] else 0)


def retry(escalation_id: Annotated[str, typer.Argument(help="A dead_letter escalation.")]) -> None:
    """Send a parked (dead_letter) case back to the stage it failed in, once its cause is fixed."""
    client = make_client()
    result = call(lambda: client.retry(escalation_id))
    typer.echo(f"{escalation_id} is back in {result['state']}; the stage runs now")
