"""What an agent's tool call is told for each case a person (or nobody) closed: only a
person's Allow allows, and both Claude Code answer shapes say so."""

from __future__ import annotations

from typing import Any

import pytest

from workflows.tool_calls import answer_for


def case(state: str, outcome: str | None, value: str = "", **decision: Any) -> dict[str, Any]:
    chosen = {"option": value.title(), "value": value, "decided_by": "ana", **decision}
    return {"state": state, "outcome": outcome, "decision": chosen if value else None}


@pytest.mark.parametrize(
    ("the_case", "decision"),
    [
        (case("closed", "decided", "allow", resumes=True, channel="dashboard"), "allow"),
        (case("closed", "decided", "deny", resumes=False), "deny"),
        (case("closed", "decided", "allow", resumes=False), "deny"),
        (case("closed", "defaulted", "abort", is_default=True), "deny"),
        (case("closed", "reconcile_first", "allow", resumes=True), "deny"),
        (case("closed", "cancelled"), "deny"),
        (case("refused", None), "deny"),
        (case("dead_letter", "parked"), "deny"),
        (case("awaiting", None), "deny"),
        (None, "deny"),
    ],
)
def test_only_a_persons_allow_allows(the_case: dict[str, Any] | None, decision: str) -> None:
    answer = answer_for(the_case, "c-1")
    assert answer.decision == decision
    assert "c-1" in answer.reason
    hook = answer.hook_output()["hookSpecificOutput"]
    assert (hook["permissionDecision"], hook["permissionDecisionReason"]) == (
        decision,
        answer.reason,
    )
    prompt = answer.permission_output({"command": "rm -rf x"})
    if decision == "allow":
        assert prompt == {"behavior": "allow", "updatedInput": {"command": "rm -rf x"}}
        assert "ana (via dashboard)" in answer.reason
    else:
        assert prompt == {"behavior": "deny", "message": answer.reason}
