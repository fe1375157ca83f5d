"""`escalate raise`: file an escalation from flags or a packet file, for agents and shell loops."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Annotated, Any

import typer

from api.blocked_cli import after_blocked_raise, blocked_path, write_blocked
from api.cli_common import call, fail, make_client
from api.wait_cli import wait_and_exit

if TYPE_CHECKING:
    from api.client import ClientError

EXIT_UNREADABLE = 2
EXIT_BLOCKED = 2  # SPEC §5: the run wrote BLOCKED.md and stops; the same code as unreadable


def _read_packet(path: str) -> Any:
    from api.check_cli import read_packet

    return read_packet(path)


def _packet_from_flags(values: dict[str, Any]) -> dict[str, Any]:
    """Build a packet from `escalate raise` flags; recipient and waiting behavior left out
    are filled by the service's design at intake, as for every way in."""
    import secrets as _secrets
    from datetime import UTC, datetime

    evidence = []
    for item in values["evidence"]:
        kind, _, ref = item.partition(":")
        evidence.append({"kind": kind, "ref": ref})
    stamp = datetime.now(UTC).strftime("%Y-%m-%d")
    return {
        "packet_id": values["packet_id"] or f"esc-{stamp}-{_secrets.token_hex(3)}",
        "run_id": values["run"],
        "task_summary": values["summary"],
        "severity": values["severity"],
        "trigger_type": values["trigger"],
        "trigger_detail": values["detail"],
        "attempted": values["attempted"],
        "evidence": evidence,
        "completed": values["completed"],
        "remaining": values["remaining"] or [values["blocked_on"] or values["question"]],
        "blocked_on": values["blocked_on"] or values["question"],
        "requested_action": values["question"],
        "resume_condition": values["resume_condition"] or "a decision recorded on this case",
        **{
            key: value
            for key, value in (
                ("recipient", values["recipient"]),
                ("waiting_behavior", values["waiting"]),
            )
            if value
        },
    }


def _error_text(exc: ClientError) -> str:
    """A client error as one line for BLOCKED.md and stderr."""
    detail = exc.detail
    if exc.status == 422 and isinstance(detail, dict) and detail.get("errors"):
        problems = "; ".join(str(line) for line in detail["errors"])
        return f"the service refused the packet, nothing was sent: {problems}"
    if exc.status == 0:
        return f"the service could not be reached: {detail}"
    if isinstance(detail, dict) and "detail" in detail:
        detail = detail["detail"]
    return f"the service answered HTTP {exc.status}: {detail}"


def raise_(
    packet_file: Annotated[str | None, typer.Option("--packet", help="Packet JSON file.")] = None,
    run: Annotated[str | None, typer.Option(help="Run id.")] = None,
    question: Annotated[str | None, typer.Option(help="The decision needed, one line.")] = None,
    summary: Annotated[str | None, typer.Option(help="The task and its goal.")] = None,
    severity: Annotated[str, typer.Option(help="low|medium|high|critical")] = "medium",
    trigger: Annotated[str, typer.Option(help="Trigger type.")] = "blocked",
    detail: Annotated[
        str | None,
        typer.Option("--detail", "--context", help="Facts that fired the trigger (context)."),
    ] = None,
    attempted: Annotated[list[str] | None, typer.Option(help="What was tried (repeat).")] = None,
    evidence: Annotated[list[str] | None, typer.Option(help="KIND:REF (repeat).")] = None,
    completed: Annotated[list[str] | None, typer.Option(help="Done parts (repeat).")] = None,
    remaining: Annotated[list[str] | None, typer.Option(help="Parts to do (repeat).")] = None,
    blocked_on: Annotated[str | None, typer.Option(help="The single point stopped on.")] = None,
    recipient: Annotated[str | None, typer.Option(help="Who decides (default: tier).")] = None,
    waiting: Annotated[str | None, typer.Option(help="Waiting behavior (default: tier).")] = None,
    resume_condition: Annotated[str | None, typer.Option(help="What resumes the run.")] = None,
    packet_id: Annotated[str | None, typer.Option(help="Packet id (default: generated).")] = None,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option",
            "--choice",
            help="An answer: LABEL or 'LABEL=consequence' (repeat).",
        ),
    ] = None,
    fingerprint_git: Annotated[str | None, typer.Option(help="Git work tree to recheck.")] = None,
    fingerprint_file: Annotated[str | None, typer.Option(help="File to recheck.")] = None,
    fingerprint_url: Annotated[str | None, typer.Option(help="URL whose value to recheck.")] = None,
    verified: Annotated[str | None, typer.Option(help="What was last verified good.")] = None,
    wake_task: Annotated[str | None, typer.Option(help="Celery task to send on close.")] = None,
    wake_queue: Annotated[
        str | None, typer.Option(help="Queue your worker consumes (default: celery).")
    ] = None,
    wake_webhook: Annotated[str | None, typer.Option(help="URL to POST on close.")] = None,
    blocked_file: Annotated[
        bool,
        typer.Option(
            "--blocked-file",
            help="Shell loops (SPEC §5): write ./BLOCKED.md and exit 2, even when filing "
            "failed (then the file says NOT FILED and why); the service removes it and "
            "writes DECISION.md beside it on the decision.",
        ),
    ] = False,
    blocked_file_path: Annotated[
        str | None,
        typer.Option(
            "--blocked-file-path", help="Write BLOCKED.md here instead (implies --blocked-file)."
        ),
    ] = None,
    decision_file: Annotated[
        str | None,
        typer.Option(
            help="With --blocked-file: also append the decision under a '## Decisions' heading "
            "here (made when missing), for a loop whose prompt reads another file. "
            "IMPLEMENTATION_PLAN.md beside BLOCKED.md gets it anyway when it exists.",
        ),
    ] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Block until decided.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the response as JSON.")] = False,
) -> None:
    """Raise an escalation from flags or a packet file; prints its id (exit 2 if --blocked-file)."""
    from api.client import ClientError

    blocked = blocked_path(blocked_file, blocked_file_path)
    flags = {
        "run": run,
        "question": question,
        "summary": summary,
        "severity": severity,
        "trigger": trigger,
        "detail": detail,
        "attempted": attempted or [],
        "evidence": evidence or [],
        "completed": completed or [],
        "remaining": remaining or [],
        "blocked_on": blocked_on,
        "recipient": recipient,
        "waiting": waiting,
        "resume_condition": resume_condition,
        "packet_id": packet_id,
    }
    options = [
        dict(zip(("label", "description"), item.split("=", 1), strict=False))
        for item in option or []
    ]
    packet: Any = None
    problem = None
    if packet_file:
        try:
            packet = _read_packet(packet_file)
        except (OSError, ValueError, RecursionError) as exc:
            problem = f"cannot read packet: {exc}"
    else:
        missing = [
            name
            for name, value in (
                ("--run", run),
                ("--question", question),
                ("--summary", summary),
                ("--detail (or --context)", detail),
                ("--attempted", attempted),
                ("--evidence", evidence),
            )
            if not value
        ]
        if missing:
            problem = f"missing {', '.join(missing)} (or give --packet FILE)"
        else:
            packet = _packet_from_flags(flags)
    if problem is not None:
        if blocked is not None:
            write_blocked(blocked, None, options, flags, filing_error=problem)
        raise fail(problem, EXIT_UNREADABLE)
    fingerprint = (
        {"kind": "git", "path": os.path.abspath(fingerprint_git)}
        if fingerprint_git
        else {"kind": "file", "path": os.path.abspath(fingerprint_file)}
        if fingerprint_file
        else {"kind": "http", "url": fingerprint_url}
        if fingerprint_url
        else None
    )
    snapshot = {k: v for k, v in (("fingerprint", fingerprint), ("verified", verified)) if v}
    wake = {
        k: v
        for k, v in (
            ("task", wake_task),
            ("queue", wake_queue),
            ("webhook", wake_webhook),
            ("blocked_file", blocked and str(blocked)),
            ("decision_file", blocked and decision_file and os.path.abspath(decision_file)),
        )
        if v
    }
    client = make_client()

    def file_it() -> dict[str, Any]:
        return client.raise_(
            packet, snapshot=snapshot or None, options=options or None, wake=wake or None
        )

    if blocked is None:
        result = call(file_it)
    else:
        try:
            result = file_it()
        except ClientError as exc:  # the loop must stop all the same, and say why
            message = _error_text(exc)
            write_blocked(blocked, packet, options, flags, filing_error=message)
            raise fail(message, EXIT_BLOCKED) from None
    if as_json:
        typer.echo(json.dumps(result, indent=2))
    else:
        note = (
            ""
            if result["created"]
            else f" (already raised: that case is {result['state']})"
            if result.get("state") in ("closed", "refused", "dead_letter")
            else " (already raised: joined the open case)"
        )
        typer.echo(f"{result['id']}{note}")
        for warning in result.get("warnings", []):
            typer.echo(f"warning: {warning}", err=True)
    if blocked is not None:
        write_blocked(blocked, packet, options, flags, escalation_id=result["id"])
        after_blocked_raise(client, result["id"], blocked)
        if wait:
            typer.echo("warning: --wait is ignored with --blocked-file: the loop exits 2", err=True)
        raise typer.Exit(EXIT_BLOCKED)
    if wait:
        wait_and_exit(client, result["id"], None)
