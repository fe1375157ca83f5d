"""`escalate mcp`: the service as MCP tools and resources, on the official SDK's MCPServer.

It talks to the service over HTTP with the run's token (ESCALATE_URL, ESCALATE_TOKEN), so it
runs wherever the agent runs. No call holds longer than 45 s, under every MCP client's 60 s
request timeout: `await_decision` answers `pending` and is simply called again, from this
process or any other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from api.client import ClientError, Escalations
from api.mcp_schemas import OptionInput, PacketInput, options_body
from api.run_outcome import DECISIONS, TERMINAL_STATES, outcome_of, resumes
from workflows.vocabulary import TriggerType

MAX_HOLD = 45.0  # the service's own cap on a wait's hold
INSTRUCTIONS = (
    "Ask a named person before a risky or uncertain step. raise_escalation files the case; "
    "await_decision waits at most 45 s and returns the outcome (decided, defaulted, "
    "reconcile_first, refused, parked, cancelled) or pending: then call it again with the "
    "same id. Act only on `resumes: true`."
)


def _problems(exc: ClientError) -> list[str]:
    detail = exc.detail
    if isinstance(detail, dict):
        return [str(line) for line in detail.get("errors") or [detail.get("detail", detail)]]
    return [str(exc)]


def _view(case: dict[str, Any]) -> dict[str, Any]:
    """The case as the run reads it: its outcome in the README's vocabulary first."""
    outcome = outcome_of(case)
    return {
        "id": case["id"],
        "outcome": outcome,
        "state": case["state"],
        "resumes": resumes(case) if outcome in DECISIONS else None,
        "decision": case.get("decision"),
        "question": case.get("question"),
        "problems": case.get("problems") or [],
    }


def build_server(
    *, client: Escalations, design: Path | None = None, prompt_wait: float
) -> MCPServer[Any]:
    """The MCP server: every tool and resource, over one client for the service."""
    server: MCPServer[Any] = MCPServer("escalate", instructions=INSTRUCTIONS)

    def call(action: Any) -> Any:
        try:
            return action()
        except ClientError as exc:
            if exc.status == 0 or exc.status >= 500:
                raise ToolError(f"the escalation service is unavailable: {exc}") from None
            raise ToolError("; ".join(_problems(exc))) from None

    @server.tool()
    def raise_escalation(
        packet: PacketInput,
        options: list[str | OptionInput] | None = None,
        snapshot: dict[str, Any] | None = None,
        wake: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """File an escalation packet (SPEC §1) with the person's options (default Approve,
        Deny), the state to recheck before acting (snapshot) and how to wake the run. A packet
        the checks refuse comes back with state `refused` and every problem line."""
        from workflows.packet_checks import check_packet as check
        from workflows.secrets import find_secrets

        body = packet.to_packet()
        checked = check(body, find_secrets=find_secrets)
        if not checked.passed:  # every §1 line at once, as `escalate check` prints them
            return {"id": None, "state": "refused", "problems": checked.error_lines()}
        try:
            created = client.raise_(
                body, options=options_body(options), snapshot=snapshot, wake=wake
            )
        except ClientError as exc:
            if exc.status in (400, 409, 413, 422):
                return {"id": None, "state": "refused", "problems": _problems(exc)}
            raise ToolError(f"the escalation service did not take it: {exc}") from None
        case = call(lambda: client.get(created["id"]))
        labels = [option.get("label") for option in case.get("options") or ()]
        return {
            "id": created["id"],
            "state": created["state"],
            "joined": created.get("joined", False),
            "recipient": body.get("recipient"),
            "how_to_answer": (
                f"{body.get('recipient')} is notified on their channel and answers by replying "
                f"with one of: {', '.join(map(str, labels))} (or on the case page); call "
                "await_decision with this id to wait for it."
            ),
            "options": labels,
            "url": created.get("url"),
            "warnings": created.get("warnings", []),
        }

    @server.tool()
    def await_decision(
        escalation_id: str,
        hold_seconds: Annotated[float, Field(ge=0, le=MAX_HOLD)] = 40.0,
    ) -> dict[str, Any]:
        """Wait at most hold_seconds (≤ 45) for the case's outcome. `pending` means nobody
        decided yet: call again with the same id, from any process. Returning a decision
        acknowledges that the run resumed."""
        case = call(lambda: client.wait(escalation_id, timeout=hold_seconds, hold=hold_seconds))
        if case is None:
            return {
                "id": escalation_id,
                "outcome": "pending",
                "call_again_in_seconds": 0,
                "next": "call await_decision again with the same escalation_id",
            }
        return {**_view(case), "acknowledged": case["state"] == "closed"}

    @server.tool()
    def get_escalation(escalation_id: str) -> dict[str, Any]:
        """The case now: outcome (pending while open), state, decision and problems."""
        return _view(call(lambda: client.get(escalation_id)))

    @server.tool()
    def check_packet(packet: dict[str, Any]) -> dict[str, Any]:
        """Check a packet against SPEC §1 without filing it: verdict, errors and the report."""
        from workflows.packet_checks import check_packet as check
        from workflows.packet_checks import render_report
        from workflows.secrets import find_secrets

        result = check(packet, find_secrets=find_secrets)
        return {
            "verdict": result.verdict,
            "errors": result.error_lines(),
            "warnings": list(result.warnings),
            "report": render_report(result),
        }

    @server.tool()
    def needs_human(
        situation: str,
        trigger: TriggerType | None = None,
        counters: dict[str, float] | None = None,
        missing: list[str] | None = None,
        case: str | None = None,
        recoverable: bool = False,
        repo_answers: bool = False,
    ) -> dict[str, Any]:
        """Compose mode: does this situation need a person under the design? Answers
        needs_human, the reason and the rule that decided."""
        from api.tool_gate import load_gate_design
        from workflows.errors import DesignError, RequestInvalid
        from workflows.needs_human import decide_needs_human
        from workflows.requests import situation_from_inputs

        try:
            facts = situation_from_inputs(
                situation,
                trigger=trigger.value if trigger else None,
                counters=[f"{name}={value}" for name, value in (counters or {}).items()],
                missing=missing or (),
                case=case,
                recoverable=recoverable,
                repo_answers=repo_answers,
            )
            verdict = decide_needs_human(load_gate_design(design), facts)
        except RequestInvalid as exc:
            return {"needs_human": None, "problems": exc.problems}
        except DesignError as exc:
            raise ToolError(f"the design cannot be read: {exc}") from None
        return verdict.to_dict()

    @server.tool()
    def permission_prompt(
        tool_name: str, input: dict[str, Any], tool_use_id: str | None = None
    ) -> str:
        """For `claude -p --permission-prompt-tool`: the design's tools rules, then a person.
        Returns {"behavior": "allow", "updatedInput": ...} or {"behavior": "deny", ...}."""
        from api.tool_gate import gate, load_gate_design
        from workflows.errors import DesignError
        from workflows.tool_calls import Answer, ToolCall

        the_call = ToolCall(
            tool=tool_name,
            tool_input=input,
            session_id="permission-prompt",
            tool_use_id=tool_use_id or "",
        )
        try:
            answer = gate(
                the_call, design=load_gate_design(design), client=client, wait=prompt_wait
            )
        except DesignError as exc:
            answer = Answer("deny", f"the escalation design cannot be read: {exc}")
        return json.dumps(answer.permission_output(input), ensure_ascii=False)

    @server.resource("escalate://cases/open", mime_type="application/json")
    def open_cases() -> str:
        """The cases not yet closed, refused or parked, newest first (at most 500)."""
        # Asked of the service: the newest 500 of all cases, filtered here, left out an
        # older open case whenever 500 newer ones had ended. Filtered here still, as a
        # service older than its `open` filter lists every case.
        cases = call(lambda: client.list(open="true", limit=500))
        return json.dumps([c for c in cases if c["state"] not in TERMINAL_STATES])

    @server.resource("escalate://cases/{escalation_id}", mime_type="application/json")
    def one_case(escalation_id: str) -> str:
        """One case as the run reads it."""
        return json.dumps(_view(call(lambda: client.get(escalation_id))))

    return server
