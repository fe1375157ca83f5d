"""Put one agent tool call through the design's `tools:` rules and, when one matches, a person.

Shared by `escalate hook claude` and the MCP permission-prompt tool. Any failure (no design,
the service down, a refusal) answers deny: the gate never lets a call through by accident.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from workflows.tool_calls import OPTIONS, Answer, ToolCall, answer_for, packet_for_call
from workflows.tool_rules import match_tool

if TYPE_CHECKING:
    from api.client import Escalations
    from workflows.design import Design


def load_gate_design(path: str | Path | None = None) -> Design:
    """The design whose `tools:` rules apply: `path`, else ESCALATE_DESIGN. Raises DesignError."""
    from models.design_file import load_design
    from models.settings import Settings

    return load_design(path or Settings().design_path)


def gate(call: ToolCall, *, design: Design, client: Escalations, wait: float) -> Answer:
    """Allow at once when no rule matches; else file a case and wait up to `wait` seconds."""
    from api.client import ClientError
    from workflows.secrets import find_secrets

    found = match_tool(design.tools, call.tool, call.tool_input)
    if found is None:
        return Answer("allow", f"no tools rule of design {design.name!r} matches {call.tool}")
    secrets = find_secrets(dict(call.tool_input), path="tool_input")
    if secrets:  # name where and what kind, never the value; nothing is sent to anyone
        where = ", ".join(f"{s.field} ({s.kind})" for s in secrets)
        return Answer(
            "deny",
            f"the {call.tool} call holds a secret in {where}; it was not sent to anyone. "
            "Read the secret from the environment or a file instead of writing it out.",
        )
    recipient = design.tier(found.rule.severity).recipient.primary
    packet = packet_for_call(call, found, recipient=recipient)
    try:
        created = client.raise_(packet, options=[dict(option) for option in OPTIONS])
        case_id = str(created["id"])
        case = client.wait(case_id, timeout=wait, hold=min(25.0, max(wait, 0.0)))
    except ClientError as exc:
        return Answer("deny", f"the escalation service did not take the call: {_lines(exc)}")
    return answer_for(case, case_id)


def _lines(exc: Exception) -> str:
    detail = getattr(exc, "detail", None)
    if isinstance(detail, dict):
        lines = detail.get("errors") or [detail.get("detail", detail)]
        return "; ".join(str(line) for line in lines)
    return str(exc)
