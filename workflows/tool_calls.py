"""An agent's tool call put to a person: the packet it files and the answer the agent gets.

Pure: the Claude Code hook and the permission-prompt tool (api/tool_gate.py) call these with
the case JSON the service returned; a defaulted, undecided or ended case never allows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from workflows.tool_rules import ToolMatch

# The two answers a person gets for a tool call; only "allow" lets the call run.
OPTIONS: tuple[dict[str, str], ...] = (
    {"label": "Allow", "value": "allow"},
    {"label": "Deny", "value": "deny"},
)
DETAIL_LIMIT = 1500  # characters of the call shown to the person; the rest is cut

Decision = Literal["allow", "deny", "ask"]


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """What the agent is about to do, as Claude Code's hook payload names it."""

    tool: str
    tool_input: Mapping[str, Any]
    session_id: str
    cwd: str = ""
    tool_use_id: str = ""
    transcript_path: str = ""


@dataclass(frozen=True)
class Answer:
    """The gate's answer: allow, deny or ask, why (who decided), and the case if one was filed."""

    decision: Decision
    reason: str
    case_id: str | None = None

    def hook_output(self) -> dict[str, Any]:
        """Claude Code's PreToolUse output (hookSpecificOutput.permissionDecision)."""
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": self.decision,
                "permissionDecisionReason": self.reason,
            }
        }

    def permission_output(self, tool_input: Mapping[str, Any]) -> dict[str, Any]:
        """The `claude -p --permission-prompt-tool` result: behavior allow (with the input) or
        deny (with a message); an `ask` cannot be put to anyone there, so it denies."""
        if self.decision == "allow":
            return {"behavior": "allow", "updatedInput": dict(tool_input)}
        return {"behavior": "deny", "message": self.reason}


def _cut(text: str) -> str:
    return text if len(text) <= DETAIL_LIMIT else f"{text[:DETAIL_LIMIT]}… (cut)"


def packet_for_call(call: ToolCall, found: ToolMatch, *, recipient: str) -> dict[str, Any]:
    """The escalation packet for a tool call a `tools:` rule stopped (SPEC §1 fields)."""
    session = call.session_id or "unknown-session"
    where = f" in {call.cwd}" if call.cwd else ""
    return {
        # One case per tool call: the hook run again for the same call joins it.
        "packet_id": f"tool-{call.tool_use_id or session}"[:200],
        "run_id": f"claude-code-{session}"[:200],
        "task_summary": f"Claude Code session {session}{where} is about to use {call.tool}.",
        "severity": found.rule.severity.value,
        "trigger_type": found.rule.trigger.value,
        "trigger_detail": _cut(found.detail()),
        "attempted": [f"Stopped the {call.tool} call before it ran (PreToolUse)."],
        "evidence": [{"kind": "log", "ref": call.transcript_path or f"session {session}"}],
        "completed": [],
        "remaining": [f"Run the {call.tool} call, or leave it out."],
        "blocked_on": f"The design's tools rule {found.rule.pattern!r} needs a person's yes.",
        "requested_action": f"Allow {call.tool} to run {found.field}: {_cut(found.text)[:200]}?",
        "recipient": recipient,
        "waiting_behavior": "paused",
        "resume_condition": "A reply choosing Allow or Deny.",
    }


def _who(decision: Mapping[str, Any]) -> str:
    by, channel = decision.get("decided_by") or "someone", decision.get("channel")
    return f"{by} (via {channel})" if channel else str(by)


def answer_for(case: Mapping[str, Any] | None, case_id: str) -> Answer:
    """What the agent is told once the wait returns; only a person's Allow allows."""
    if case is None or case.get("state") not in ("closed", "refused", "dead_letter"):
        return Answer(
            "deny",
            f"no decision yet on case {case_id} within the hook's wait; nothing ran. "
            "Run the same call again to keep waiting for the person's answer.",
            case_id,
        )
    outcome = case.get("outcome")
    decision: Mapping[str, Any] = case.get("decision") or {}
    if outcome == "decided":
        chose = decision.get("option") or decision.get("value")
        if decision.get("value") == "allow" and decision.get("resumes") is not False:
            return Answer("allow", f"{_who(decision)} chose {chose} on case {case_id}", case_id)
        return Answer("deny", f"{_who(decision)} chose {chose} on case {case_id}", case_id)
    if outcome == "defaulted":
        return Answer(
            "deny",
            f"nobody decided case {case_id} in time; the default "
            f"{decision.get('value')!r} applied, which never allows",
            case_id,
        )
    if outcome == "reconcile_first":
        return Answer(
            "deny", f"case {case_id} was decided but the world changed: look again", case_id
        )
    problems = "; ".join(str(line) for line in case.get("problems") or ())
    return Answer(
        "deny", f"case {case_id} ended {outcome or case.get('state')} {problems}".strip(), case_id
    )
