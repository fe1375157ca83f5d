"""The `escalate` command line: check packets and designs, raise, answer and watch cases."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from api.cli_common import call, fail, load_settings, make_client

# Keep this module import-light: `escalate check` runs on every iteration of a shell loop.
# Commands that need the database, broker or web server import them inside their body.

app = typer.Typer(
    name="escalate",
    help="Human-in-the-loop escalations for autonomous runs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_UNREADABLE = 2


def _read_packet(path: str) -> Any:
    from api.check_cli import read_packet

    return read_packet(path)


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
) -> None:
    """Check an escalation packet (SPEC §1): exit 0 PASS, 1 FAIL, 2 unreadable."""
    # The console script runs api/check_cli.py directly; this entry keeps `escalate --help`
    # listing the command and serves callers that invoke the typer app.
    from api.check_cli import run_check

    raise typer.Exit(
        run_check(packet, make_fixture=make_fixture, make_valid=make_valid, as_json=as_json)
    )


# --- Talking to a running service -------------------------------------------------------

EXIT_RESUME, EXIT_STOP, EXIT_TIMED_OUT = 0, 3, 4


def _packet_from_flags(values: dict[str, Any]) -> dict[str, Any]:
    """Build a packet from `escalate raise` flags; the design fills recipient and waiting."""
    import secrets as _secrets
    from datetime import UTC, datetime

    from models.design import load_design

    design = load_design(load_settings().design_path)
    tier = design.tier(values["severity"])
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
        "recipient": values["recipient"] or tier.recipient.primary,
        "waiting_behavior": values["waiting"] or tier.waiting_behavior.value,
        "resume_condition": values["resume_condition"] or "a decision recorded on this case",
    }


EXIT_BLOCKED = 2  # SPEC §5: the run wrote BLOCKED.md and stops; the same code as unreadable


def _blocked_path(flag: bool, path: str | None) -> Any:
    """The absolute BLOCKED.md path asked for, or None (absolute: the service writes there)."""
    import os
    from pathlib import Path

    if not flag and path is None:
        return None
    return Path(os.path.abspath(path or "BLOCKED.md"))


def _known_packet(flags: dict[str, Any]) -> dict[str, Any]:
    """What BLOCKED.md can say when no packet could be built or read."""
    return {
        "run_id": flags["run"] or "(unknown run)",
        "packet_id": flags["packet_id"] or "(none)",
        "task_summary": flags["summary"] or "",
        "trigger_type": flags["trigger"],
        "trigger_detail": flags["detail"] or "",
        "blocked_on": flags["blocked_on"] or flags["question"] or "",
        "requested_action": flags["question"] or "(no question given)",
        "attempted": flags["attempted"] or [],
    }


def _error_text(exc: Any) -> str:
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


def _write_blocked(
    path: Any,
    packet: Any,
    raw_options: list[dict[str, str]],
    flags: dict[str, Any],
    *,
    escalation_id: str | None = None,
    filing_error: str | None = None,
) -> None:
    """Write BLOCKED.md with what is known; a disk error is reported, the exit stays 2."""
    from workers.unblock import write_atomically
    from workflows.blocked_file import render_blocked
    from workflows.case import parse_options

    try:
        options = parse_options(raw_options or None)
    except ValueError:
        options = ()  # the refusal on stderr and in the file names the problem
    known = _known_packet(flags)
    try:
        text = render_blocked(
            packet if isinstance(packet, dict) else known,
            options,
            escalation_id=escalation_id,
            filing_error=filing_error,
        )
    except (TypeError, AttributeError):  # a packet file of the wrong shape
        text = render_blocked(
            known, options, escalation_id=escalation_id, filing_error=filing_error
        )
    try:
        write_atomically(path, text)
    except OSError as exc:
        typer.echo(f"error: cannot write {path}: {exc}", err=True)
        return
    typer.echo(f"blocked: wrote {path}; the loop stops until it is removed", err=True)


def _unblock_locally(client: Any, case: dict[str, Any], blocked: Any) -> str | None:
    """Do on this disk what the service does on close: DECISION.md, decisions.log, unblock."""
    from workers.unblock import unblock
    from workflows.blocked_file import decision_log_line, render_decision, unblock_paths

    history = call(lambda: client.events(case["id"]))
    closes = [e["detail"] for e in history["events"] if e["kind"] == "closed"]
    if not closes:
        return f"case {case['id']} has no close entry; {blocked} left in place"
    close, at = closes[-1], str(case.get("closed_at") or "")
    decision_file, decisions_log = unblock_paths(str(blocked))
    return unblock(
        {
            "escalation_id": case["id"],
            "blocked_file": str(blocked),
            "decision_file": decision_file,
            "decisions_log": decisions_log,
            "decision_md": render_decision(
                close,
                escalation_id=case["id"],
                run_id=str(case.get("run_id")),
                packet_id=str(case.get("packet_id")),
                question=str(case.get("question") or ""),
                closed_at=at,
            ),
            "log_line": decision_log_line(close, escalation_id=case["id"], closed_at=at),
        }
    )


def _after_blocked_raise(client: Any, escalation_id: str, blocked: Any) -> None:
    """Close the race with a fast decision, and say when the service will not unblock."""
    from api.client import ClientError

    try:
        case = client.get(escalation_id)
    except ClientError:
        return  # the raise worked; the service unblocks on close
    if case.get("state") == "closed":  # decided before BLOCKED.md was on disk
        try:
            note = _unblock_locally(client, case, blocked)
        except OSError as exc:
            note = f"cannot unblock {blocked}: {exc}"
        except typer.Exit:  # the events could not be read (said on stderr); still exit 2
            note = f"run `escalate wait {escalation_id} --unblock` to unblock {blocked}"
        if note:
            typer.echo(f"warning: {note}", err=True)
    elif (case.get("wake") or {}).get("blocked_file") != str(blocked):
        typer.echo(
            f"warning: case {escalation_id} was raised earlier without this file, so the service "
            f"will not remove it: run `escalate wait {escalation_id} --unblock "
            f"--blocked-file {blocked}`",
            err=True,
        )


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
    wait: Annotated[bool, typer.Option("--wait", help="Block until decided.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the response as JSON.")] = False,
) -> None:
    """Raise an escalation from flags or a packet file; prints its id (exit 2 if --blocked-file)."""
    from api.client import ClientError

    blocked = _blocked_path(blocked_file, blocked_file_path)
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
            try:
                packet = _packet_from_flags(flags)
            except (OSError, ValueError) as exc:  # the design that fills the rest
                problem = f"cannot complete the packet from the design: {exc}"
    if problem is not None:
        if blocked is not None:
            _write_blocked(blocked, None, options, flags, filing_error=problem)
        raise fail(problem, EXIT_UNREADABLE)
    fingerprint = (
        {"kind": "git", "path": fingerprint_git}
        if fingerprint_git
        else {"kind": "file", "path": fingerprint_file}
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
            ("webhook", wake_webhook),
            ("blocked_file", blocked and str(blocked)),
        )
        if v
    }
    client = make_client()

    def file_it() -> Any:
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
            _write_blocked(blocked, packet, options, flags, filing_error=message)
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
        _write_blocked(blocked, packet, options, flags, escalation_id=result["id"])
        _after_blocked_raise(client, result["id"], blocked)
        if wait:
            typer.echo("warning: --wait is ignored with --blocked-file: the loop exits 2", err=True)
        raise typer.Exit(EXIT_BLOCKED)
    if wait:
        _wait_and_exit(client, result["id"], None)


def _wait_and_exit(
    client: Any,
    escalation_id: str,
    timeout: float | None,
    *,
    unblock: bool = False,
    blocked_file: str | None = None,
) -> None:
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


def _unblock_after_wait(client: Any, case: dict[str, Any], blocked_file: str | None) -> None:
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
        note = _unblock_locally(client, case, path)
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
    _wait_and_exit(
        make_client(),
        escalation_id,
        timeout,
        unblock=unblock or blocked_file is not None,
        blocked_file=blocked_file,
    )


def _mount_subcommands() -> None:
    """Add every command but `check`, in the order `escalate --help` lists them."""
    from api import cases_cli, service_cli
    from api.design_cli import design_app
    from api.parse_reply_cli import register
    from api.pipeline_cli import register as register_pipelines
    from api.request_cli import register as register_requests

    app.command()(service_cli.serve)
    app.command()(service_cli.migrate)
    app.command("raise")(raise_)
    app.command()(cases_cli.reply)
    app.command("list")(cases_cli.list_)
    app.command()(cases_cli.show)
    app.command("wait")(wait_)
    app.command("telegram-poll")(service_cli.telegram_poll)
    app.command()(service_cli.inbox)
    register(app)
    register_requests(app)
    register_pipelines(app)
    app.add_typer(design_app, name="design", help="Validate design records (SPEC §2).")


_mount_subcommands()


def main() -> None:
    """Console-script entry point."""
    app()
