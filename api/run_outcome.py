"""What a waiting run makes of a case: one reading, shared by `escalate wait`, the pipeline
`--wait`, the Python client and its decorator. It reads the case JSON only, so an agent's
side needs nothing of the service's internals."""

from __future__ import annotations

from enum import IntEnum
from typing import Any

TERMINAL_STATES = frozenset({"closed", "refused", "dead_letter"})
DECISIONS = frozenset({"decided", "defaulted", "reconcile_first"})  # the run acts on these


class Exit(IntEnum):
    """`escalate wait` exit codes; the README's table lists the same."""

    RESUME = 0  # a person decided, on an option that lets the run go on
    ERROR = 1  # the service could not be reached, or refused the request
    USAGE = 2
    STOPPED = 3  # a person decided, on an option that stops the run
    DEFAULTED = 4  # nobody decided in time: the design's default action applied
    RECONCILE_FIRST = 5  # decided, but the world changed meanwhile: look before acting
    NO_DECISION = 6  # refused, parked or cancelled: no decision will come as things are
    PENDING = 7  # still undecided when the wait's own timeout ran out: wait again


def outcome_of(case: dict[str, Any] | None) -> str:
    """The case's outcome as the run sees it; `pending` while nothing is decided."""
    if case is None or case.get("state") not in TERMINAL_STATES:
        return "pending"
    return str(case.get("outcome") or "pending")


def resumes(case: dict[str, Any] | None) -> bool:
    """Whether the decision (a person's or the default) lets the run go on."""
    return bool(((case or {}).get("decision") or {}).get("resumes"))


def exit_code(case: dict[str, Any] | None) -> Exit:
    outcome = outcome_of(case)
    if outcome == "decided":
        return Exit.RESUME if resumes(case) else Exit.STOPPED
    if outcome == "defaulted":
        return Exit.DEFAULTED
    if outcome == "reconcile_first":
        return Exit.RECONCILE_FIRST
    if outcome == "pending":
        return Exit.PENDING
    return Exit.NO_DECISION


def wait_view(case: dict[str, Any] | None, escalation_id: str) -> dict[str, Any]:
    """The JSON `escalate wait` prints: the outcome, the decision and what to do next."""
    if case is None:
        return {"id": escalation_id, "state": "waiting", "outcome": "pending", "timed_out": True}
    return {
        "id": case["id"],
        "state": case["state"],
        "outcome": outcome_of(case),
        "resumes": resumes(case) if outcome_of(case) in DECISIONS else None,
        "decision": case.get("decision"),
        "reasons": case.get("reasons") or [],  # who acknowledged, extended, reassigned, why
    }
