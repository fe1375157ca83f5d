"""The design record: the examples load, each mistake is named with its key path."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from models.design_file import load_design
from workflows.design import Design, parse_design
from workflows.errors import DesignError
from workflows.vocabulary import Severity, TimeoutAction, TriggerType, WaitingBehavior

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
Mutation = Callable[[dict[str, Any]], None]


def fast_design_data() -> dict[str, Any]:
    """The seconds-long example design as plain data, to mutate per test."""
    data: dict[str, Any] = yaml.safe_load((EXAMPLES / "design-fast.yaml").read_text())
    return copy.deepcopy(data)


def write(tmp_path: Path, data: object, name: str = "design.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize("name", ["design.yaml", "design-fast.yaml"])
def test_given_an_example_design_when_loaded_then_all_four_tiers_are_there(name: str) -> None:
    # Given / When
    design = load_design(EXAMPLES / name)
    # Then
    assert design.version >= 1
    assert {s: design.tier(s).recipient.primary for s in Severity}.keys() == set(Severity)
    assert design.tier(Severity.CRITICAL).waiting_behavior in {
        WaitingBehavior.PAUSED,
        WaitingBehavior.STOPPED,
    }


def test_given_the_example_when_loaded_then_it_reads_as_written() -> None:
    design = load_design(str(EXAMPLES / "design.yaml"))
    assert design.name == "example"
    assert design.tier("low").window == timedelta(hours=4)
    assert design.tier("low").timeout == timedelta(hours=8)  # defaults to 2 x window
    assert design.tier("high").timeout == timedelta(hours=1)
    assert design.tier("high").next_tier is Severity.CRITICAL
    assert design.tier("medium").recipient.copies == ("ops-log",)
    trigger = design.trigger(TriggerType.TOOL_FAILURE)
    assert trigger is not None
    assert (trigger.counter, trigger.threshold, trigger.retry_limit) == (
        "consecutive_verify_failures",
        3,
        3,
    )
    assert design.trigger("blocked") is None
    assert design.changes[-1].version == 3


def test_given_the_bad_example_when_loaded_then_every_problem_is_listed() -> None:
    with pytest.raises(DesignError) as caught:
        load_design(EXAMPLES / "bad-design.yaml")
    assert len(caught.value.problems) >= 5
    assert all(
        line.startswith(str(EXAMPLES / "bad-design.yaml"))
        for line in str(caught.value).splitlines()
    )


def set_in(*path_and_value: Any) -> Mutation:
    """A mutation setting data[a][b]... = value."""
    *path, value = path_and_value

    def mutate(data: dict[str, Any]) -> None:
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


def drop(*path: str) -> Mutation:
    """A mutation deleting data[a][b]...."""

    def mutate(data: dict[str, Any]) -> None:
        target = data
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return mutate


def rename(parent: tuple[str, ...], old: str, new: str) -> Mutation:
    """A mutation renaming one key, as a typo would."""

    def mutate(data: dict[str, Any]) -> None:
        target = data
        for key in parent:
            target = target[key]
        target[new] = target.pop(old)

    return mutate


@pytest.mark.parametrize(
    ("mutation", "expected"),
    [
        pytest.param(
            set_in("severities", "critical", "waiting_behavior", "read_only"),
            "severities.critical.waiting_behavior: critical must be paused or stopped, "
            "got 'read_only'",
            id="critical-read-only",
        ),
        pytest.param(
            drop("severities", "low"), "severities: missing tier 'low'", id="missing-tier"
        ),
        pytest.param(
            rename(("severities", "high"), "window", "windw"),
            "severities.high.windw: unknown key (did you mean 'window'? valid: window, timeout,",
            id="typo-key",
        ),
        pytest.param(
            rename((), "severities", "severites"),
            "severites: unknown key (did you mean 'severities'?",
            id="typo-top-key",
        ),
        pytest.param(
            set_in("severities", "urgent", {}),
            "severities.urgent: unknown tier (valid: low, medium, high, critical)",
            id="unknown-tier",
        ),
        pytest.param(
            set_in("severities", "high", "window", "15x"),
            "severities.high.window: '15x' is not a duration (use e.g. 90s, 15m, 2h, 1d",
            id="bad-duration",
        ),
        pytest.param(
            set_in("severities", "high", "window", 90),
            "severities.high.window: 90 has no unit",
            id="duration-without-unit",
        ),
        pytest.param(
            rename(("triggers",), "tool_failure", "tool_falure"),
            "triggers.tool_falure: unknown trigger type (did you mean 'tool_failure'? "
            "valid: blocked, uncertain, harm_risk",
            id="unknown-trigger",
        ),
        pytest.param(
            set_in("severities", "medium", "timeout_default", "wait"),
            "severities.medium.timeout_default: 'wait' is not valid "
            "(use skip, queue, retry, abort or hold)",
            id="bad-timeout-default",
        ),
        pytest.param(
            set_in("severities", "high", "next_tier", "low"),
            "severities.high.next_tier: must be a tier more severe than high (one of: critical)",
            id="next-tier-not-more-severe",
        ),
        pytest.param(
            set_in("severities", "high", "timeout", "2s"),
            "severities.high.timeout: timeout 2s must be longer than window 3s",
            id="timeout-before-window",
        ),
        pytest.param(
            set_in("severities", "low", "recipient", "json://example.test/hook"),
            "severities.low.recipient.primary: must be an apprise tag (e.g. ops), not a URL",
            id="recipient-url",
        ),
        pytest.param(
            set_in("severities", "low", "recipient", {"copies": ["ops"]}),
            "severities.low.recipient: missing required key 'primary'",
            id="recipient-without-primary",
        ),
        pytest.param(set_in("version", 0), "version: must be at least 1, got 0", id="version-0"),
        pytest.param(
            set_in("version", "3"), "version: expected a whole number, got text '3'", id="version-s"
        ),
        pytest.param(drop("name"), "missing required key 'name'", id="no-name"),
        pytest.param(
            set_in("triggers", {}), "triggers: must list at least one entry", id="no-triggers"
        ),
        pytest.param(
            drop("triggers", "tool_failure", "threshold"),
            "triggers.tool_failure.threshold: counter 'consecutive_verify_failures' needs a "
            "threshold",
            id="counter-without-threshold",
        ),
        pytest.param(
            set_in("triggers", "blocked", "when_missing", ["X"]),
            "triggers.blocked.when_missing: when_missing only applies to missing_input",
            id="when-missing-elsewhere",
        ),
        pytest.param(
            set_in("changes", [{"version": 2, "reason": "later"}]),
            "changes[0].version: version 2 is newer than the design's version 1",
            id="change-from-the-future",
        ),
        pytest.param(
            set_in("never_escalate", 0, "cases", []),
            "never_escalate[0].cases: must list at least one entry",
            id="never-escalate-without-cases",
        ),
        pytest.param(
            set_in("severities", "high", "deciders", ["slack:U1", "U123"]),
            "severities.high.deciders[1]: 'U123' has no channel; write channel:id "
            "(e.g. slack:U123, cli:U123) or channel:*",
            id="decider-without-channel",
        ),
        pytest.param(
            set_in("severities", "high", "deciders", [""]),
            "severities.high.deciders[0]: must be an identity, got an empty value",
            id="decider-empty",
        ),
        pytest.param(
            set_in("severities", "high", "deciders", ["slack: U1"]),
            "severities.high.deciders[0]: 'slack: U1' has a space; only 'link via <tag>' may",
            id="decider-with-space",
        ),
        pytest.param(
            set_in("severities", "high", "deciders", ["*"]),
            "severities.high.deciders[0]: '*' would let anyone decide: leave deciders out",
            id="decider-anyone",
        ),
        pytest.param(
            set_in("severities", "high", "deciders", ["slack:U1*"]),
            "severities.high.deciders[0]: 'slack:U1*': * stands for a whole id only "
            "(write slack:*)",
            id="decider-partial-wildcard",
        ),
        pytest.param(
            set_in("severities", "high", "deciders", ["*:U1"]),
            "severities.high.deciders[0]: '*:U1': name the channel; only the id may be *",
            id="decider-channel-wildcard",
        ),
        pytest.param(
            set_in("severities", "high", "deciders", ["slack:"]),
            "severities.high.deciders[0]: 'slack:' has no id after the colon",
            id="decider-without-id",
        ),
        pytest.param(
            set_in("severities", "high", "deciders", ["link:ops"]),
            "severities.high.deciders[0]: 'link:ops' never matches: a link answers as "
            "'link via <tag>' (write link via ops, or link:* for any link)",
            id="decider-link-colon-tag",
        ),
        pytest.param(
            set_in("severities", "high", "deciders", ["link via ops oncall"]),
            "severities.high.deciders[0]: 'link via ops oncall' must be 'link via <tag>' "
            "with one apprise tag",
            id="decider-link-two-tags",
        ),
        pytest.param(
            set_in("severities", "high", "deciders", ["link via *"]),
            "severities.high.deciders[0]: 'link via *': write link:* for a link sent to any tag",
            id="decider-link-via-star",
        ),
        pytest.param(
            set_in("severities", "high", "deciders", ["json://example.test/hook"]),
            "severities.high.deciders[0]: 'json://example.test/hook' is a URL, not an identity",
            id="decider-url",
        ),
        pytest.param(
            set_in("severities", "high", "deciders", [123]),
            "severities.high.deciders[0]: expected text, got number 123",
            id="decider-number",
        ),
        pytest.param(
            set_in("severities", "high", "deciders", "slack:U1"),
            "severities.high.deciders: expected a list, got text 'slack:U1'",
            id="deciders-not-a-list",
        ),
        pytest.param(
            set_in("severities", "high", "deciders", ["slack:U1", "SLACK:u1"]),
            "severities.high.deciders[1]: 'SLACK:u1' is listed twice (identities ignore case)",
            id="decider-twice",
        ),
        pytest.param(
            set_in("owner_may_not_approve", ["harm_risk", "harm"]),
            "owner_may_not_approve[1]: unknown trigger type (did you mean 'harm_risk'? "
            "valid: blocked, uncertain, harm_risk, cost_risk, permission_denied, "
            "conflicting_instructions, missing_input, tool_failure)",
            id="owner-rule-unknown-trigger",
        ),
        pytest.param(
            set_in("owner_may_not_approve", ["harm_risk", "harm_risk"]),
            "owner_may_not_approve[1]: harm_risk is listed twice",
            id="owner-rule-twice",
        ),
        pytest.param(
            set_in("owner_may_not_approve", "harm_risk"),
            "owner_may_not_approve: expected a list, got text 'harm_risk'",
            id="owner-rule-not-a-list",
        ),
        pytest.param(
            set_in("owner_may_not_aprove", []),
            "owner_may_not_aprove: unknown key (did you mean 'owner_may_not_approve'?",
            id="owner-rule-typo",
        ),
        pytest.param(
            set_in("severities", "high", "decider", ["slack:U1"]),
            "severities.high.decider: unknown key (did you mean 'deciders'?",
            id="deciders-typo",
        ),
    ],
)
def test_given_a_malformed_design_when_loaded_then_the_problem_names_its_key_path(
    tmp_path: Path, mutation: Mutation, expected: str
) -> None:
    # Given the fast example with one mistake
    data = fast_design_data()
    mutation(data)
    path = write(tmp_path, data)
    # When it is loaded
    with pytest.raises(DesignError) as caught:
        load_design(path)
    # Then one line names the file, the key path and what is wrong
    assert any(problem.startswith(expected) for problem in caught.value.problems), (
        caught.value.problems
    )
    assert f"{path}: {expected}" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name: x\nversion: 1\n  bad: [\n", "line 3, column 6: YAML syntax error: mapping values"),
        ("name: a\nname: b\n", "line 2, column 1: duplicate key 'name'"),
        (
            "- a\n- b\n",
            "a design must be a mapping (name, version, triggers, severities, ...), got a list",
        ),
        ("just text\n", "a design must be a mapping"),
        ("", "the design is empty"),
    ],
)
def test_given_a_file_that_is_not_a_design_when_loaded_then_the_error_says_why(
    tmp_path: Path, text: str, expected: str
) -> None:
    # Given
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    # When
    with pytest.raises(DesignError) as caught:
        load_design(path)
    # Then
    assert caught.value.problems[0].startswith(expected), caught.value.problems
    assert str(caught.value).startswith(f"{path}: ")


def test_given_no_file_when_loaded_then_the_error_names_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(DesignError) as caught:
        load_design(missing)
    assert str(caught.value) == f"{missing}: cannot read: no such file"
    assert isinstance(caught.value, ValueError)


def test_given_a_harm_risk_case_when_timing_out_then_it_aborts_whatever_the_tier_says() -> None:
    # Given a design whose low tier skips on timeout
    design = load_design(EXAMPLES / "design.yaml")
    assert design.tier(Severity.LOW).timeout_default is TimeoutAction.SKIP
    # When / Then harm_risk aborts (irreversible), other triggers follow the tier
    for severity in Severity:
        assert design.timeout_action(severity, TriggerType.HARM_RISK) is TimeoutAction.ABORT
    assert design.timeout_action("low", "tool_failure") is TimeoutAction.SKIP
    assert design.timeout_action("high", "cost_risk") is TimeoutAction.RETRY


def test_given_the_same_content_when_hashed_then_the_hash_is_stable(tmp_path: Path) -> None:
    # Given the same design written with different key order, comments and an explicit
    # timeout equal to its default
    data = fast_design_data()
    reordered = dict(reversed(list(data.items())))
    reordered["severities"]["low"]["timeout"] = "6s"  # 2 x window, the default
    first = load_design(EXAMPLES / "design-fast.yaml")
    second = load_design(write(tmp_path, reordered))
    # When / Then
    assert first.content_hash == second.content_hash
    assert len(first.content_hash) == 64


def test_given_a_changed_design_when_hashed_then_the_hash_changes(tmp_path: Path) -> None:
    data = fast_design_data()
    data["severities"]["high"]["recipient"] = "oncall-b"
    changed = load_design(write(tmp_path, data))
    assert changed.content_hash != load_design(EXAMPLES / "design-fast.yaml").content_hash


def test_given_a_design_when_dumped_to_json_then_it_loads_back_equal() -> None:
    # Given
    design = load_design(EXAMPLES / "design.yaml")
    # When
    dumped = design.model_dump(mode="json")
    # Then durations are written the way people write them, and nothing is lost
    assert dumped["severities"]["high"]["window"] == "15m"
    again = parse_design(dumped, source="<frozen>")
    assert again == design
    assert again.content_hash == design.content_hash


def test_given_a_design_when_changed_in_place_then_it_refuses() -> None:
    design = load_design(EXAMPLES / "design.yaml")
    with pytest.raises(ValidationError):
        design.version = 4


def test_given_a_recipient_as_one_tag_when_loaded_then_it_is_the_primary_without_copies(
    tmp_path: Path,
) -> None:
    data = fast_design_data()
    data["severities"]["low"]["recipient"] = "ops-low"
    tier = load_design(write(tmp_path, data)).tier("low")
    assert (tier.recipient.primary, tier.recipient.copies) == ("ops-low", ())


def test_given_python_values_when_built_directly_then_the_same_rules_apply() -> None:
    data = fast_design_data()
    data["severities"]["critical"]["waiting_behavior"] = "safe_subset"
    with pytest.raises(ValidationError):
        Design.model_validate(data)


def design_using_new_keys() -> dict[str, Any]:
    """The fast example with every decider form and a stricter owner rule."""
    data = fast_design_data()
    data["severities"]["high"]["deciders"] = ["slack:U123", "telegram:*", "api:operator"]
    data["severities"]["critical"]["deciders"] = ["link via oncall-pager", "link:*"]
    data["owner_may_not_approve"] = ["harm_risk", "cost_risk"]
    return data


def test_given_deciders_and_an_owner_rule_when_loaded_then_they_read_as_written(
    tmp_path: Path,
) -> None:
    # Given
    data = design_using_new_keys()
    data["severities"]["critical"]["deciders"][0] = "  link   via oncall-pager "
    # When
    design = load_design(write(tmp_path, data))
    # Then
    assert design.tier("high").deciders == ("slack:U123", "telegram:*", "api:operator")
    assert design.tier("critical").deciders == ("link via oncall-pager", "link:*")
    assert design.tier("low").deciders == ()
    assert design.owner_may_not_approve == (TriggerType.HARM_RISK, TriggerType.COST_RISK)


def test_given_no_owner_rule_when_loaded_then_owners_may_not_approve_harm_risk() -> None:
    design = load_design(EXAMPLES / "design-fast.yaml")
    assert design.owner_may_not_approve == (TriggerType.HARM_RISK,)
    assert all(design.tier(s).deciders == () for s in Severity)


def test_given_a_design_using_the_new_keys_when_frozen_as_json_then_it_parses_back_equal() -> None:
    # Given a design with deciders and an owner rule, frozen the way an escalation keeps it
    design = parse_design(design_using_new_keys(), source="test")
    frozen = json.loads(json.dumps(design.model_dump(mode="json")))
    # When it is parsed back later
    again = parse_design(frozen, source="<frozen>")
    # Then nothing is lost, and it cites the same design
    assert frozen["owner_may_not_approve"] == ["harm_risk", "cost_risk"]
    assert frozen["severities"]["critical"]["deciders"] == ["link via oncall-pager", "link:*"]
    assert again == design
    assert again.content_hash == design.content_hash


@pytest.mark.parametrize(
    "mutation",
    [
        pytest.param(set_in("owner_may_not_approve", ["harm_risk"]), id="owner-rule-default"),
        pytest.param(set_in("severities", "high", "deciders", []), id="empty-deciders"),
    ],
)
def test_given_a_new_key_at_its_default_when_hashed_then_the_hash_is_as_without_it(
    tmp_path: Path, mutation: Mutation
) -> None:
    # Given the same design with a new key written out at its default
    data = fast_design_data()
    mutation(data)
    # When / Then designs written before the keys existed keep the hash they were cited by
    plain = load_design(EXAMPLES / "design-fast.yaml")
    assert load_design(write(tmp_path, data)).content_hash == plain.content_hash


@pytest.mark.parametrize(
    "mutation",
    [
        pytest.param(set_in("owner_may_not_approve", []), id="owner-rule-off"),
        pytest.param(set_in("severities", "high", "deciders", ["slack:U1"]), id="deciders"),
    ],
)
def test_given_a_new_key_set_when_hashed_then_the_hash_changes(
    tmp_path: Path, mutation: Mutation
) -> None:
    data = fast_design_data()
    mutation(data)
    plain = load_design(EXAMPLES / "design-fast.yaml")
    assert load_design(write(tmp_path, data)).content_hash != plain.content_hash


def test_given_the_examples_commented_deciders_when_uncommented_then_the_design_loads(
    tmp_path: Path,
) -> None:
    # Given the example with its commented deciders line switched on
    text = (EXAMPLES / "design.yaml").read_text()
    assert text.count("    # deciders: ") == 1
    path = tmp_path / "design.yaml"
    path.write_text(text.replace("    # deciders: ", "    deciders: "))
    # When / Then
    deciders = load_design(path).tier("critical").deciders
    assert deciders == ("slack:U0ONCALL1", "telegram:*", "api:operator", "link via oncall-pager")
