"""LangGraph (`pip install agent-escalation[langgraph]`): a graph's interrupt() becomes an
escalation, and its decision resumes the graph with Command(resume=...), from any process that
opens the graph with the same checkpointer and thread.

The interrupt's value is the packet (SPEC §1 fields, plus optional `options` and `snapshot`),
or just the question as text; `defaults` fills what the graph leaves out (run_id, recipient...).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from api.client import Escalations
from api.run_outcome import DECISIONS, outcome_of, resumes


class Graph(Protocol):
    """What this needs of a compiled LangGraph graph (with a checkpointer)."""

    def get_state(self, config: Any) -> Any: ...

    def invoke(self, input: Any, config: Any) -> Any: ...


@dataclass(frozen=True)
class Resumed:
    """What came of a resume: the case's outcome, whether the graph ran on, and its output."""

    outcome: str
    resumed: bool
    output: Any = None


def _thread(config: Mapping[str, Any]) -> str:
    return str(config.get("configurable", {}).get("thread_id", "default"))


def _pending(graph: Graph, config: Any) -> Any:
    interrupts = getattr(graph.get_state(config), "interrupts", ())
    return interrupts[0] if interrupts else None


def packet_for_interrupt(
    value: Any, *, thread_id: str, interrupt_id: str, defaults: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any], Any, Any]:
    """(packet, options, snapshot) for one interrupt; one packet id per interrupt, so filing
    it again joins the same case."""
    payload = dict(value) if isinstance(value, Mapping) else {"requested_action": str(value)}
    options, snapshot = payload.pop("options", None), payload.pop("snapshot", None)
    packet = {
        "run_id": f"langgraph-{thread_id}",
        **(defaults or {}),
        **payload,
        "packet_id": f"lg-{thread_id}-{interrupt_id}"[:200],
    }
    return packet, options, snapshot


def escalate_interrupt(
    client: Escalations,
    graph: Graph,
    config: Any,
    *,
    defaults: Mapping[str, Any] | None = None,
) -> str | None:
    """File the graph's pending interrupt as an escalation; its id, or None when the graph is
    not interrupted. A refused packet raises ClientError with every problem line."""
    pending = _pending(graph, config)
    if pending is None:
        return None
    packet, options, snapshot = packet_for_interrupt(
        pending.value, thread_id=_thread(config), interrupt_id=pending.id, defaults=defaults
    )
    created = client.raise_(packet, options=options, snapshot=snapshot)
    return str(created["id"])


def resume_value(case: Mapping[str, Any]) -> dict[str, Any]:
    """What interrupt() returns inside the graph: the outcome and the decision."""
    decision = case.get("decision") or {}
    return {
        "escalation_id": case.get("id"),
        "outcome": outcome_of(dict(case)),
        "resumes": resumes(dict(case)),
        "option": decision.get("option"),
        "value": decision.get("value"),
        "decided_by": decision.get("decided_by"),
        "is_default": decision.get("is_default", False),
    }


def resume_if_decided(
    client: Escalations,
    graph: Graph,
    config: Any,
    escalation_id: str,
    *,
    timeout: float = 0.0,
) -> Resumed:
    """Wait up to `timeout` for the case; once decided (or defaulted), resume the graph with
    Command(resume=...) and acknowledge the wake. Refused, parked or cancelled cases do not
    resume; nor does a graph already past this interrupt (no replay)."""
    from langgraph.types import Command

    case = client.wait(escalation_id, timeout=timeout, hold=min(25.0, timeout), ack=False)
    outcome = outcome_of(case)
    if case is None or outcome not in DECISIONS:
        return Resumed(outcome, False)
    pending = _pending(graph, config)
    if pending is None or not str(case.get("packet_id", "")).endswith(f"-{pending.id}"):
        return Resumed(outcome, False, getattr(graph.get_state(config), "values", None))
    output = graph.invoke(Command(resume=resume_value(case)), config)
    if case["state"] == "closed":
        client.ack(escalation_id)
    return Resumed(outcome, True, output)
