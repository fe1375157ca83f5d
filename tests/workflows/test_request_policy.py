"""JobClaw's policy text read beside the design (workflows/request_policy.py): the seed's own
example policy, clause by clause, and the labels a job-hunting run offers."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from models.design_file import load_design
from workflows.request_policy import apply_policy
from workflows.request_schema import verb_problem
from workflows.requests import compose, situation_from_inputs

SEED_POLICY = (
    "Escalate any irreversible action; auto-proceed on captcha if MFA backup is configured"
)
DESIGN = Path(__file__).resolve().parents[2] / "examples" / "design.yaml"


@pytest.mark.parametrize(
    ("situation", "configured", "needs_human", "clause"),
    [
        ("Captcha at Workday submit for Mercury.", (), True, "Escalate any irreversible action"),
        ("Captcha on the Mercury login page.", (), None, None),  # no permission, no verdict
        ("Captcha on the Mercury login page.", ("MFA backup",), False, "auto-proceed on captcha"),
        ("Captcha on login; MFA backup is configured.", (), False, "auto-proceed on captcha"),
        # irreversible beats proceed, whatever is configured
        ("Captcha before payment.", ("MFA backup",), True, "Escalate any irreversible action"),
        ("The cover letter is long.", (), None, None),
    ],
)
def test_the_seed_policy_reads_the_same_every_time(
    situation: str, configured: tuple[str, ...], needs_human: bool | None, clause: str | None
) -> None:
    read = apply_policy(SEED_POLICY, situation, configured=configured)
    assert read.needs_human is needs_human
    assert (read.clause or "").startswith(clause or "")
    assert read.reason and read.unapplied == ()


@pytest.mark.parametrize(
    ("policy", "situation", "needs_human"),
    [
        ("Never escalate cover letter wording", "Cover letter wording is odd.", False),
        ("Always escalate salary questions", "The form asks salary expectations.", None),
        ("Always escalate salary questions", "The form asks a salary question.", True),
        ("Ask on relocation", "The role needs relocation.", True),
    ],
)
def test_other_clause_shapes(policy: str, situation: str, needs_human: bool | None) -> None:
    assert apply_policy(policy, situation).needs_human is needs_human


def test_a_clause_of_no_known_shape_is_reported_not_guessed() -> None:
    read = apply_policy("Be careful with money", "Pay the fee.")
    assert read.needs_human is None and read.unapplied == ("Be careful with money",)


def test_harm_risk_is_never_waved_through_by_a_proceed_clause() -> None:
    read = apply_policy("Never escalate table drops", "Drop tables now.", harm_risk=True)
    assert read.needs_human is None and "harm_risk always asks" in read.reason


def test_a_policy_verdict_is_explained_beside_the_designs() -> None:
    design = load_design(DESIGN)
    now = datetime(2026, 12, 1, tzinfo=UTC)
    # The design alone would not ask (no trigger); the policy asks, and says which clause
    situation = situation_from_inputs("Ready to submit the Mercury application.")
    composed = compose(design, situation, policy=SEED_POLICY, request_id="0" * 12, now=now)
    assert composed.verdict.needs_human is True
    assert composed.verdict.rule == "policy: Escalate any irreversible action"
    assert composed.request is not None and composed.request.trigger_type.value == "harm_risk"
    assert composed.request.timeout_default.action.value == "abort"  # irreversible: abort
    assert composed.answer()["policy"]["decided"] is True
    # The policy lets a configured captcha through, and says so
    situation = situation_from_inputs("Captcha on the login page.", trigger="blocked")
    composed = compose(
        design, situation, policy=SEED_POLICY, request_id="1" * 12, now=now,
        configured=["MFA backup"],
    )  # fmt: skip
    assert composed.verdict.needs_human is False and composed.request is None
    assert composed.verdict.rule.startswith("policy: auto-proceed on captcha")
    assert "mfa backup is configured" in composed.verdict.reason


@pytest.mark.parametrize(
    "label", ["Solve captcha", "Submit anyway", "Apply now", "Withdraw", "Skip job"]
)
def test_ordinary_imperative_labels_are_verb_led(label: str) -> None:
    assert verb_problem(label) is None


@pytest.mark.parametrize("label", ["Submitting", "Approved", "Captcha"])
def test_participles_and_nouns_are_still_refused(label: str) -> None:
    assert verb_problem(label) is not None
