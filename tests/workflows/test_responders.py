"""Who may decide: a tier's deciders, the owner's own harm_risk cases, the service itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from workflows.design import Design, parse_design
from workflows.identities import check_pattern, matches
from workflows.responders import Verdict, may_decide

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def design_with(**top: Any) -> Design:
    """The fast example with deciders on two tiers and the given top-level keys."""
    # No deciders on low and medium; high is decided by one Slack user, anyone on Telegram
    # and the operator token; critical only through links sent to oncall.
    data: dict[str, Any] = yaml.safe_load((EXAMPLES / "design-fast.yaml").read_text())
    data["severities"]["high"]["deciders"] = ["slack:U123", "telegram:*", "api:operator"]
    data["severities"]["critical"]["deciders"] = ["link via oncall"]
    return parse_design({**data, **top}, source="test")


@pytest.fixture(scope="module")
def design() -> Design:
    return design_with()


def ask(
    design: Design,
    responder: str,
    *,
    severity: str = "medium",
    trigger_type: str = "blocked",
    owner: str | None = None,
    resumes: bool = True,
    verified: bool = True,
) -> Verdict:
    return may_decide(
        design,
        severity=severity,
        trigger_type=trigger_type,
        responder=responder,
        owner=owner,
        resumes=resumes,
        verified=verified,
    )


@pytest.mark.parametrize(
    ("responder", "kwargs", "allowed", "reason"),
    [
        pytest.param(
            "slack:U999",
            {"severity": "medium"},
            True,
            "the medium tier names no deciders: anyone the case reached may decide",
            id="no-deciders-anyone",
        ),
        pytest.param(
            "slack:U123",
            {"severity": "high"},
            True,
            "slack:U123 is a decider for the high tier",
            id="exact",
        ),
        pytest.param(
            "Slack:u123",
            {"severity": "high"},
            True,
            "Slack:u123 is a decider for the high tier",
            id="exact-ignores-case",
        ),
        pytest.param(
            "slack:U999",
            {"severity": "high"},
            False,
            "slack:U999 may not decide: the high tier may be decided only by "
            "slack:U123, telegram:*, api:operator",
            id="exact-other-user-refused",
        ),
        pytest.param(
            "telegram:456789",
            {"severity": "high"},
            True,
            "telegram:456789 is a decider for the high tier",
            id="channel-wildcard",
        ),
        pytest.param(
            "api:operator",
            {"severity": "high"},
            True,
            "api:operator is a decider for the high tier",
            id="operator-token",
        ),
        pytest.param(
            "cli:alice",
            {"severity": "high"},
            False,
            "cli:alice may not decide: the high tier may be decided only by",
            id="named-sender-is-not-the-token",
        ),
        pytest.param(
            "link via ops",
            {"severity": "high"},
            False,
            "link via ops may not decide: the high tier may be decided only by",
            id="link-not-listed",
        ),
        pytest.param(
            "link via oncall",
            {"severity": "critical"},
            True,
            "link via oncall is a decider for the critical tier",
            id="link-via-tag",
        ),
        pytest.param(
            "link via ops",
            {"severity": "critical"},
            False,
            "link via ops may not decide: the critical tier may be decided only by link via oncall",
            id="link-via-other-tag-refused",
        ),
        pytest.param(
            "slack:U123",
            {"severity": "medium", "trigger_type": "harm_risk", "owner": "slack:U123"},
            False,
            "the run's owner may not approve its own harm_risk case; another decider must",
            id="owner-approving-harm-risk-refused",
        ),
        pytest.param(
            "slack:U123",
            {"severity": "high", "trigger_type": "harm_risk", "owner": "SLACK:u123"},
            False,
            "the run's owner may not approve its own harm_risk case; another decider must",
            id="owner-is-a-decider-still-refused",
        ),
        pytest.param(
            "slack:U123",
            {
                "severity": "medium",
                "trigger_type": "harm_risk",
                "owner": "slack:U123",
                "resumes": False,
            },
            True,
            "the medium tier names no deciders",
            id="owner-stopping-harm-risk-allowed",
        ),
        pytest.param(
            "slack:U123",
            {"severity": "medium", "trigger_type": "blocked", "owner": "slack:U123"},
            True,
            "the medium tier names no deciders",
            id="owner-approving-blocked-allowed",
        ),
        pytest.param(
            "slack:U777",
            {"severity": "medium", "trigger_type": "harm_risk", "owner": "slack:U123"},
            True,
            "the medium tier names no deciders",
            id="someone-else-approving-harm-risk-allowed",
        ),
        pytest.param(
            "slack:U123",
            {"severity": "medium", "trigger_type": "harm_risk", "owner": None},
            True,
            "the medium tier names no deciders",
            id="no-owner-given",
        ),
        pytest.param(
            "slack:U999",
            {"severity": "high", "trigger_type": "harm_risk", "owner": "slack:U999"},
            False,
            "slack:U999 may not decide: the high tier",
            id="not-a-decider-said-before-owner",
        ),
        pytest.param(
            "link via ops",
            {"trigger_type": "harm_risk", "owner": "slack:U123", "verified": False},
            False,
            "an unverified answer (link via ops) may not approve a harm_risk case that has an "
            "owner",
            id="unverified-approving-owned-harm-risk-refused",
        ),
        pytest.param(
            "link via ops",
            {
                "trigger_type": "harm_risk",
                "owner": "slack:U123",
                "verified": False,
                "resumes": False,
            },
            True,
            "the medium tier names no deciders",
            id="unverified-stopping-owned-harm-risk-allowed",
        ),
        pytest.param(
            "dashboard:ana",
            {"trigger_type": "harm_risk", "owner": "api:ana"},
            False,
            "the run's owner may not approve its own harm_risk case",
            id="token-holder-on-the-other-face-refused",
        ),
        pytest.param(
            "system (timeout default)",
            {"severity": "critical", "trigger_type": "harm_risk", "owner": "system"},
            True,
            "the service's own decision (a timeout default)",
            id="system-always-allowed",
        ),
    ],
)
def test_given_a_responder_when_deciding_then_the_design_says_whether_they_may(
    design: Design, responder: str, kwargs: dict[str, Any], allowed: bool, reason: str
) -> None:
    # Given the design above and a reply from `responder`
    # When
    verdict = ask(design, responder, **kwargs)
    # Then
    assert verdict.allowed is allowed
    assert verdict.reason.startswith(reason), verdict.reason
    assert "\n" not in verdict.reason


def test_given_owner_may_not_approve_when_the_owner_approves_then_the_list_decides() -> None:
    # Given a design whose owners may approve anything, and one that bars cost_risk too
    anything = design_with(owner_may_not_approve=[])
    stricter = design_with(owner_may_not_approve=["harm_risk", "cost_risk"])
    owner = {"owner": "cli:alice", "resumes": True}
    # When / Then
    assert ask(anything, "cli:alice", trigger_type="harm_risk", **owner).allowed
    assert not ask(stricter, "cli:alice", trigger_type="cost_risk", **owner).allowed


def test_given_a_responder_with_a_line_break_when_refused_then_the_reason_is_one_line(
    design: Design,
) -> None:
    verdict = ask(design, "slack:U9\nslack:U123", severity="high")
    assert not verdict.allowed
    assert verdict.reason.startswith("slack:U9 slack:U123 may not decide")


@pytest.mark.parametrize(
    ("pattern", "responder", "expected"),
    [
        ("slack:U123", "slack:U123", True),
        ("slack:U123", " slack:u123 ", True),
        ("slack:U123", "slack:U1234", False),
        ("slack:*", "slack:U9", True),
        ("slack:*", "slack:", False),
        ("slack:*", "slackware:U9", False),
        ("slack:*", "telegram:U9", False),
        ("telegram:*", "link via telegram", False),
        ("link:*", "link via ops", True),
        ("link:*", "link via oncall", True),
        ("link:*", "slack:U9", False),
        ("link via ops", "link via ops", True),
        ("link via ops", "Link  via OPS", True),
        ("link via ops", "link via ops-low", False),
        ("api:operator", "api:operator", True),
        ("api:operator", "cli:operator", False),
    ],
)
def test_given_a_pattern_when_matched_then_only_the_identities_it_names_match(
    pattern: str, responder: str, expected: bool
) -> None:
    assert matches(check_pattern(pattern), responder) is expected


def test_a_design_may_name_options_that_need_a_confirm_step() -> None:
    from models.design_file import load_design

    design = load_design(EXAMPLES / "design.yaml")
    data = {**design.model_dump(mode="json"), "destructive_options": ["Wipe", "drop table"]}
    marked = parse_design(data, source="t")
    assert marked.destructive_options == ("Wipe", "drop table")
    assert parse_design(marked.model_dump(mode="json"), source="t") == marked
    assert marked.content_hash != design.content_hash
