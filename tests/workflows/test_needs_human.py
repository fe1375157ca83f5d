"""Compose mode: the design decides whether a situation needs a human, and says why."""

from __future__ import annotations

from pathlib import Path

import pytest

from models.design_file import load_design
from workflows.design import Design
from workflows.needs_human import NeedsHuman, Situation, decide_needs_human
from workflows.vocabulary import TriggerType

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def design() -> Design:
    # The example lists tool_failure (3 in a row, 3 retries), cost_risk ($50),
    # missing_input (DEPLOY_TOKEN_NAME, DEPLOY_REGION), harm_risk, permission_denied,
    # conflicting_instructions; never-escalate cases formatting, naming, dependency-patch.
    return load_design(EXAMPLES / "design.yaml")


@pytest.mark.parametrize(
    ("situation", "needs_human", "rule", "reason"),
    [
        pytest.param(
            Situation(trigger_type=TriggerType.HARM_RISK, case="Formatting"),
            False,
            "never_escalate:routine-style",
            "never escalate: case 'formatting' is routine under rule 'routine-style'",
            id="never-escalate-rule-wins",
        ),
        pytest.param(
            Situation(
                trigger_type=TriggerType.TOOL_FAILURE,
                counters={"consecutive_verify_failures": 2},
            ),
            False,
            "triggers.tool_failure",
            "consecutive_verify_failures is 2, tool_failure escalates at 3",
            id="under-threshold",
        ),
        pytest.param(
            Situation(
                trigger_type=TriggerType.TOOL_FAILURE,
                counters={"consecutive_verify_failures": 3},
            ),
            True,
            "triggers.tool_failure",
            "tool_failure: consecutive_verify_failures is 3, threshold 3 "
            "(verify failed 3 times in a row on one task)",
            id="at-threshold",
        ),
        pytest.param(
            Situation(trigger_type=TriggerType.COST_RISK, counters={"spend_usd": 72.5}),
            True,
            "triggers.cost_risk",
            "cost_risk: spend_usd is 72.5, threshold 50",
            id="over-threshold",
        ),
        pytest.param(
            Situation(trigger_type=TriggerType.COST_RISK),
            False,
            "triggers.cost_risk",
            "spend_usd not reported (cost_risk escalates at 50): report it",
            id="counter-not-reported",
        ),
        pytest.param(
            Situation(
                trigger_type=TriggerType.MISSING_INPUT,
                missing_inputs=frozenset({"DEPLOY_TOKEN_NAME"}),
            ),
            True,
            "triggers.missing_input",
            "missing_input: DEPLOY_TOKEN_NAME is missing",
            id="named-input-missing",
        ),
        pytest.param(
            Situation(trigger_type=TriggerType.MISSING_INPUT, missing_inputs=frozenset({"COLOR"})),
            False,
            "triggers.missing_input",
            "COLOR missing, but the design escalates only for DEPLOY_TOKEN_NAME, DEPLOY_REGION",
            id="unnamed-input-missing",
        ),
        pytest.param(
            Situation(trigger_type=TriggerType.MISSING_INPUT),
            False,
            "triggers.missing_input",
            "none of DEPLOY_TOKEN_NAME, DEPLOY_REGION is missing",
            id="nothing-missing",
        ),
        pytest.param(
            Situation(trigger_type=TriggerType.BLOCKED),
            False,
            "unlisted_trigger",
            "design 'example' v3 has no trigger for blocked: routine, decide from the brief",
            id="unlisted-trigger",
        ),
        pytest.param(
            Situation(
                trigger_type=TriggerType.TOOL_FAILURE,
                counters={"consecutive_verify_failures": 3, "retries_used": 1},
                recoverable=True,
            ),
            False,
            "retry_first",
            "recoverable error: retry 2 of 3 first",
            id="recoverable-with-retries-left",
        ),
        pytest.param(
            Situation(trigger_type=TriggerType.BLOCKED, recoverable=True, retries_left=2),
            False,
            "retry_first",
            "recoverable error with 2 retries left: retry first",
            id="recoverable-no-limit-in-design",
        ),
        pytest.param(
            Situation(
                trigger_type=TriggerType.TOOL_FAILURE,
                counters={"consecutive_verify_failures": 4, "retries_used": 3},
                recoverable=True,
            ),
            True,
            "triggers.tool_failure",
            "tool_failure: consecutive_verify_failures is 4, threshold 3; all 3 retries used",
            id="recoverable-retries-exhausted",
        ),
        pytest.param(
            Situation(trigger_type=TriggerType.UNCERTAIN, repo_answers=True),
            False,
            "repo_answers",
            "the repo or brief already answers this",
            id="repo-answers",
        ),
        pytest.param(
            Situation(trigger_type=TriggerType.HARM_RISK, description="drop table users"),
            True,
            "triggers.harm_risk",
            "harm_risk: raised by the run and listed in the design",
            id="harm-risk-listed",
        ),
        pytest.param(
            Situation(description="just wondering"),
            False,
            "no_trigger",
            "no trigger fired",
            id="no-trigger",
        ),
    ],
)
def test_given_a_situation_when_decided_then_the_answer_and_reason_are_concrete(
    design: Design, situation: Situation, needs_human: bool, rule: str, reason: str
) -> None:
    # Given the example design and a situation / When decided
    decision = decide_needs_human(design, situation)
    # Then the answer, the deciding rule and the numbers in the reason are as expected
    assert (decision.needs_human, decision.rule) == (needs_human, rule), decision
    assert decision.reason.startswith(reason), decision.reason
    assert "\n" not in decision.reason


def test_given_a_decision_when_serialised_then_it_is_the_compose_mode_answer() -> None:
    decision = NeedsHuman(False, "no trigger fired: nothing to escalate", "no_trigger")
    assert decision.to_dict() == {
        "needs_human": False,
        "reason": "no trigger fired: nothing to escalate",
        "rule": "no_trigger",
    }


def test_given_json_like_facts_when_a_situation_is_built_then_they_are_normalised() -> None:
    # Given facts as an agent would send them
    situation = Situation(
        trigger_type="tool_failure",  # type: ignore[arg-type]
        counters={"spend_usd": 3},
        missing_inputs=["A"],  # type: ignore[arg-type]
        case="  Naming ",
    )
    # Then they are typed, immutable values
    assert situation.trigger_type is TriggerType.TOOL_FAILURE
    assert situation.missing_inputs == frozenset({"A"})
    assert situation.case == "naming"
    with pytest.raises(TypeError):
        situation.counters["spend_usd"] = 4  # type: ignore[index]


def test_given_an_unknown_trigger_name_when_a_situation_is_built_then_it_is_refused() -> None:
    with pytest.raises(ValueError):
        Situation(trigger_type="on_fire")  # type: ignore[arg-type]
