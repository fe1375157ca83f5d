"""`escalate hook claude`: a Claude Code PreToolUse hook that asks a person before risky calls."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

hook_app = typer.Typer(
    name="hook",
    help="Agent hooks: put an agent's risky tool calls to a person (docs/INTEGRATIONS.md).",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Mount `hook claude` on the `escalate` app."""
    app.add_typer(hook_app, name="hook")


def _deny(reason: str) -> None:
    from workflows.tool_calls import Answer

    typer.echo(json.dumps(Answer("deny", reason).hook_output()))


def _read_call(raw: str) -> Any:
    """The payload as a ToolCall, or a line saying what is wrong with it."""
    from workflows.tool_calls import ToolCall

    try:
        payload = json.loads(raw)
    except ValueError as exc:
        return f"the hook payload on stdin is not JSON: {exc}"
    if not isinstance(payload, dict):
        return "the hook payload on stdin is not a JSON object"
    tool, tool_input = payload.get("tool_name"), payload.get("tool_input")
    if not isinstance(tool, str) or not tool:
        return "the hook payload has no tool_name"
    if not isinstance(tool_input, dict):
        return "the hook payload's tool_input is not an object"
    texts: dict[str, str] = {}
    for name in ("session_id", "cwd", "tool_use_id", "transcript_path"):
        value = payload.get(name)
        texts[name] = value if isinstance(value, str) else ""
    return ToolCall(tool=tool, tool_input=tool_input, **texts)


@hook_app.command(
    "claude",
    epilog="Prints hookSpecificOutput.permissionDecision allow/deny on stdout and exits 0. "
    "A call no tools: rule matches is allowed at once; a defaulted, undecided or failed "
    "case is denied, never allowed.",
)
def claude(
    wait: Annotated[
        float,
        typer.Option(
            min=0, max=3600, help="Seconds to wait for the person; keep under the hook's timeout."
        ),
    ] = 50.0,
    design: Annotated[
        Path | None,
        typer.Option(help="Design record with tools: rules (default: ESCALATE_DESIGN)."),
    ] = None,
) -> None:
    """Read a PreToolUse payload on stdin; allow, or ask a person and print their answer."""
    from api.cli_common import make_client
    from api.tool_gate import gate, load_gate_design
    from workflows.errors import DesignError

    payload = sys.stdin.read()
    try:
        event = json.loads(payload).get("hook_event_name")
    except (ValueError, AttributeError):
        event = None
    if event not in (None, "PreToolUse"):
        return  # not ours to decide: say nothing, Claude Code carries on as it would
    call = _read_call(payload)
    if isinstance(call, str):
        _deny(call)
        return
    try:
        the_design = load_gate_design(design)
    except DesignError as exc:
        _deny(f"the escalation design cannot be read: {exc}")
        return
    client = make_client()
    try:
        answer = gate(call, design=the_design, client=client, wait=wait)
    finally:
        client.close()
    typer.echo(json.dumps(answer.hook_output(), ensure_ascii=False))
