"""The `escalate` command line: check packets and designs, raise, answer and watch cases."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

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


def _settings() -> Any:
    from models.settings import Settings

    return Settings()


def _client() -> Any:
    """A client for ESCALATE_URL with ESCALATE_TOKEN, or the local server's generated token."""
    import os

    from api.auth import load_tokens
    from api.client import Escalations

    settings = _settings()
    url = os.environ.get("ESCALATE_URL", f"http://{settings.host}:{settings.port}")
    token = os.environ.get("ESCALATE_TOKEN")
    if not token:  # on the server's own machine: the strongest configured or generated token
        by_role = {role: value for value, role in load_tokens(settings).items()}
        token = next((by_role[r] for r in ("admin", "operator", "agent") if r in by_role), "")
    return Escalations(url, token)


def _fail(message: str, code: int = 1) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _call(action: Any) -> Any:
    from api.client import ClientError

    try:
        return action()
    except ClientError as exc:
        detail = exc.detail
        if isinstance(detail, dict):
            lines = detail.get("errors") or [detail.get("detail", detail)]
            raise _fail("\n  ".join(str(line) for line in lines)) from None
        raise _fail(str(exc)) from None


@app.command()
def serve() -> None:
    """Run API, worker and beat on the embedded defaults (SQLite in $ESCALATE_HOME)."""
    from api.auth import load_tokens
    from api.serve import supervise
    from models.design import DesignError, load_design
    from models.migrate import upgrade

    settings = _settings()
    try:
        design = load_design(settings.design_path)
    except DesignError as exc:
        raise _fail(str(exc)) from None
    upgrade(settings)
    tokens = {role: token for token, role in load_tokens(settings).items()}
    typer.echo(
        f"agent-escalation on http://{settings.host}:{settings.port}  "
        f"(state in {settings.home.resolve()})"
    )
    typer.echo(f"design: {settings.design_path} ({design.name} v{design.version})")
    typer.echo(f"database: {settings.resolved_database_url}")
    typer.echo(f"broker: {settings.resolved_broker_url}")
    if not settings.api_tokens:
        typer.echo(
            "tokens (generated, also in tokens.json): "
            + ", ".join(f"{role}={token}" for role, token in sorted(tokens.items()))
        )
    if settings.public_url is None:
        typer.echo(
            f"warning: ESCALATE_PUBLIC_URL is not set: answer links in notifications "
            f"point at {settings.resolved_public_url}, which only this machine can open"
        )
    if settings.apprise_config is None:
        typer.echo(
            "channels: none configured (ESCALATE_APPRISE_CONFIG); notifications go to "
            "the local inbox: run `escalate inbox`"
        )
    raise typer.Exit(supervise(settings, announce=typer.echo))


@app.command()
def migrate() -> None:
    """Bring the database to the newest schema (serve and the API do this on start)."""
    from models.migrate import upgrade

    upgrade(_settings())
    typer.echo("database is up to date")


def _packet_from_flags(values: dict[str, Any]) -> dict[str, Any]:
    """Build a packet from `escalate raise` flags; the design fills recipient and waiting."""
    import secrets as _secrets
    from datetime import UTC, datetime

    from models.design import load_design

    design = load_design(_settings().design_path)
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


@app.command("raise")
def raise_(
    packet_file: Annotated[str | None, typer.Option("--packet", help="Packet JSON file.")] = None,
    run: Annotated[str | None, typer.Option(help="Run id.")] = None,
    question: Annotated[str | None, typer.Option(help="The decision needed, one line.")] = None,
    summary: Annotated[str | None, typer.Option(help="The task and its goal.")] = None,
    severity: Annotated[str, typer.Option(help="low|medium|high|critical")] = "medium",
    trigger: Annotated[str, typer.Option(help="Trigger type.")] = "blocked",
    detail: Annotated[str | None, typer.Option(help="Facts that fired the trigger.")] = None,
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
        list[str] | None, typer.Option(help="An answer: LABEL or 'LABEL=description' (repeat).")
    ] = None,
    fingerprint_git: Annotated[str | None, typer.Option(help="Git work tree to recheck.")] = None,
    fingerprint_file: Annotated[str | None, typer.Option(help="File to recheck.")] = None,
    fingerprint_url: Annotated[str | None, typer.Option(help="URL whose value to recheck.")] = None,
    verified: Annotated[str | None, typer.Option(help="What was last verified good.")] = None,
    wake_task: Annotated[str | None, typer.Option(help="Celery task to send on close.")] = None,
    wake_webhook: Annotated[str | None, typer.Option(help="URL to POST on close.")] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Block until decided.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the response as JSON.")] = False,
) -> None:
    """Raise an escalation from flags or a packet file; prints its id."""
    if packet_file:
        try:
            packet = _read_packet(packet_file)
        except (OSError, ValueError, RecursionError) as exc:
            raise _fail(f"cannot read packet: {exc}", EXIT_UNREADABLE) from None
    else:
        missing = [
            name
            for name, value in (
                ("--run", run),
                ("--question", question),
                ("--summary", summary),
                ("--detail", detail),
                ("--attempted", attempted),
                ("--evidence", evidence),
            )
            if not value
        ]
        if missing:
            raise _fail(f"missing {', '.join(missing)} (or give --packet FILE)", EXIT_UNREADABLE)
        packet = _packet_from_flags(
            {
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
        )
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
    options = [
        dict(zip(("label", "description"), item.split("=", 1), strict=False))
        for item in option or []
    ]
    wake = {k: v for k, v in (("task", wake_task), ("webhook", wake_webhook)) if v}
    client = _client()
    result = _call(
        lambda: client.raise_(
            packet, snapshot=snapshot or None, options=options or None, wake=wake or None
        )
    )
    if as_json:
        typer.echo(json.dumps(result, indent=2))
    else:
        note = "" if result["created"] else " (already raised: joined the open case)"
        typer.echo(f"{result['id']}{note}")
        for warning in result.get("warnings", []):
            typer.echo(f"warning: {warning}", err=True)
    if wait:
        _wait_and_exit(client, result["id"], None)


@app.command()
def reply(
    escalation_id: Annotated[str, typer.Argument(help="Escalation id.")],
    text: Annotated[list[str], typer.Argument(help="The reply, e.g. approve.")],
    as_option: Annotated[bool, typer.Option("--option", help="TEXT is an option label.")] = False,
    sender: Annotated[str | None, typer.Option(help="Who is answering.")] = None,
) -> None:
    """Answer an escalation; exit 0 when it decided, 1 when it was recorded without deciding."""
    import getpass

    words = " ".join(text)
    client = _client()
    who = sender or f"cli:{getpass.getuser()}"
    result = _call(
        lambda: client.reply(
            escalation_id,
            option=words if as_option else None,
            text=None if as_option else words,
            sender=who,
        )
    )
    typer.echo(result["message"])
    raise typer.Exit(0 if result["outcome"] == "decided" else 1)


@app.command("list")
def list_(
    state: Annotated[str | None, typer.Option(help="Only this state.")] = None,
    severity: Annotated[str | None, typer.Option(help="Only this severity.")] = None,
    run: Annotated[str | None, typer.Option(help="Only this run.")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """List escalations, newest first."""
    client = _client()
    rows = _call(lambda: client.list(state=state, severity=severity, run=run))
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


@app.command()
def show(
    escalation_id: Annotated[str, typer.Argument(help="Escalation id.")],
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Show one escalation and its events as a timeline."""
    client = _client()
    case = _call(lambda: client.get(escalation_id))
    history = _call(lambda: client.events(escalation_id))
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


def _wait_and_exit(client: Any, escalation_id: str, timeout: float | None) -> None:
    case = _call(lambda: client.wait(escalation_id, timeout=timeout))
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
    raise typer.Exit(
        EXIT_RESUME if case.get("outcome") in ("resume", "reconcile_first") else EXIT_STOP
    )


@app.command("wait")
def wait_(
    escalation_id: Annotated[str, typer.Argument(help="Escalation id.")],
    timeout: Annotated[float | None, typer.Option(help="Give up after SECONDS (exit 4).")] = None,
) -> None:
    """Block until decided; print it as JSON. Exit 0 resume, 3 stop/abort, 4 timed out."""
    _wait_and_exit(_client(), escalation_id, timeout)


@app.command("telegram-poll")
def telegram_poll() -> None:
    """Take Telegram replies by long polling (for setups with no public URL); runs until ^C."""
    from workers.app import make_celery
    from workers.inbound.dispatch import MissLimiter, poll_telegram_once
    from workers.inbound.telegram import TelegramPoller
    from workers.runtime import runtime_for

    settings = _settings()
    if not settings.telegram_bot_token:
        raise _fail("set ESCALATE_TELEGRAM_BOT_TOKEN (the bot's token from @BotFather)")
    runtime = runtime_for(make_celery(settings))
    limiter = MissLimiter()
    typer.echo("polling Telegram for replies (Ctrl-C stops)")
    with TelegramPoller(settings.telegram_bot_token) as poller:
        while True:
            for status, body in poll_telegram_once(runtime, poller, limiter):
                typer.echo(
                    f"{status} {body.get('id', '-')}: {body.get('message') or body.get('detail')}"
                )


@app.command()
def inbox(
    last: Annotated[int, typer.Option(help="Show the last N notifications.")] = 5,
) -> None:
    """Print what the embedded local channel received (when no apprise config is set)."""
    from workers.channels import dev_inbox_path

    path = dev_inbox_path(_settings())
    if not path.exists():
        typer.echo("the local inbox is empty")
        return
    lines = path.read_text(encoding="utf-8").splitlines()[-last:]
    for line in lines:
        note = json.loads(line)
        typer.echo(f"=== {note.get('received_at', '')[:19]}  {note.get('title', '')}")
        typer.echo(note.get("message", ""))
        typer.echo("")


def _mount_subcommands() -> None:
    from api.design_cli import design_app
    from api.parse_reply_cli import register

    register(app)
    app.add_typer(design_app, name="design", help="Validate design records (SPEC §2).")


_mount_subcommands()


def main() -> None:
    """Console-script entry point."""
    app()
