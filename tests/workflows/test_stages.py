"""The six stages of SPEC §3 as pure functions: state, design and `now` in, a decision out."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from models.design_file import load_design
from workflows.case import Case, Option, parse_options
from workflows.closing import Recheck, close_case, recheck
from workflows.delivery_failure import delivery_failure_packet
from workflows.design import Design, parse_design
from workflows.examples import valid_packet
from workflows.packet_checks import check_packet
from workflows.routing import apply_timeout, follow_up, route_case, route_facts
from workflows.secrets import find_secrets
from workflows.stage_results import (
    CaseUpdate,
    DecisionSpec,
    EventSpec,
    Outbound,
    Stage,
    StageResult,
)
from workflows.stages import decide, record_snapshot
from workflows.states import State, TransitionRefused

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DESIGN = load_design(EXAMPLES / "design.yaml")
FAST = load_design(EXAMPLES / "design-fast.yaml")
NOW = datetime(2026, 10, 16, 9, 30, tzinfo=UTC)
PUBLIC_URL = "https://escalate.example"
CASE_ID = "3f2a9c1b7d4e"

# The example design's tiers: window, timeout, primary, copies, waiting, timeout default.
TIERS = {
    "low": (timedelta(hours=4), timedelta(hours=8), "ops-low", [], "safe_subset", "skip"),
    "medium": (timedelta(hours=1), timedelta(hours=2), "ops", ["ops-log"], "read_only", "queue"),
    "high": (timedelta(minutes=15), timedelta(hours=1), "oncall", ["ops"], "paused", "retry"),
    "critical": (
        timedelta(minutes=5),
        timedelta(minutes=30),
        "oncall-pager",
        ["ops-log"],
        "stopped",
        "abort",
    ),
}
ALL_STATES = list(State)


def packet_for(severity: str = "medium", **changes: Any) -> dict[str, Any]:
    """The valid worked packet at a severity, waiting as the example design's tier says."""
    packet = valid_packet()
    packet["severity"] = severity
    packet["waiting_behavior"] = TIERS[severity][4]
    packet.update(changes)
    return packet


def make_case(
    packet: dict[str, Any] | None = None, *, state: State = State.SNAPSHOTTED, **fields: Any
) -> Case:
    packet = packet_for() if packet is None else packet
    fields.setdefault("options", parse_options(None))
    return Case(
        id=CASE_ID,
        run_id=str(packet.get("run_id", "run-x")),
        packet_id=str(packet.get("packet_id", "pkt-x")),
        state=state,
        packet=packet,
        **fields,
    )


def design_with(**tier_changes: dict[str, Any]) -> Design:
    """The example design with some tiers' keys replaced."""
    data = yaml.safe_load((EXAMPLES / "design.yaml").read_text(encoding="utf-8"))
    for severity, changes in tier_changes.items():
        data["severities"][severity].update(changes)
    return parse_design(data, source="test")


def kinds(result: StageResult) -> list[str]:
    return [event.kind for event in result.events]


def other_states(*allowed: State) -> list[State]:
    return [state for state in ALL_STATES if state not in allowed]


# --- stage 1: safe-stop snapshot -----------------------------------------------------------


GIT_SPEC = {
    "verified": "unit tests passed on the migration branch",
    "proof": "ci/run/8842",
    "checked_at": "2026-10-16T09:00:00+00:00",
    "fingerprint": {"kind": "git", "path": "."},
    "scheduled_task_ids": ["5b1c0f1e-3a43-4b8f-9d1e-2f6b2f0c9a11"],
}


def test_given_a_received_case_when_snapshotted_then_spec_value_and_revocations_are_stored() -> (
    None
):
    # Given a case with the snapshot spec its request carried
    case = make_case(state=State.RECEIVED, snapshot=GIT_SPEC)
    # When the snapshot is recorded with the fingerprint read now
    result = record_snapshot(
        case, fingerprint="abc123", probe_error=None, revoked=("t-1", "t-2"), now=NOW
    )
    # Then the spec is kept, the value and revocations are added, and routing is next
    assert result.state is State.SNAPSHOTTED
    assert result.updates == CaseUpdate(
        snapshot={
            **GIT_SPEC,
            "fingerprint": {"kind": "git", "path": ".", "value": "abc123"},
            "recorded_at": "2026-10-16T09:30:00+00:00",
            "revoked_task_ids": ["t-1", "t-2"],
        }
    )
    assert result.events == (
        EventSpec(
            "snapshot_recorded",
            {
                "verified": "unit tests passed on the migration branch",
                "fingerprint_kind": "git",
                "fingerprint": "abc123",
                "revoked_task_ids": ["t-1", "t-2"],
            },
        ),
    )
    assert result.next_stage == Stage.ROUTE
    assert result.outbound == ()
    assert result.decision is None
    assert result.next_action_at is None


def test_given_no_snapshot_spec_then_the_fingerprint_kind_is_none() -> None:
    # Given a request that asked for no fingerprint / When snapshotted
    result = record_snapshot(make_case(state=State.RECEIVED), **_no_probe())
    # Then the stored fingerprint says "none" and nothing was revoked
    snapshot = result.updates.snapshot
    assert snapshot["fingerprint"] == {"kind": "none", "value": None}
    assert snapshot["revoked_task_ids"] == []
    assert result.events[0].detail["fingerprint_kind"] == "none"
    assert result.events[0].detail["verified"] is None


def _no_probe() -> dict[str, Any]:
    return {"fingerprint": None, "probe_error": None, "revoked": [], "now": NOW}


def test_given_a_probe_error_then_it_is_recorded_in_snapshot_and_event() -> None:
    # Given the fingerprint could not be read
    case = make_case(state=State.RECEIVED, snapshot={"fingerprint": {"kind": "http", "url": "u"}})
    # When snapshotted
    result = record_snapshot(
        case, fingerprint=None, probe_error="connection refused", revoked=[], now=NOW
    )
    # Then the error is kept where a person will look, and the value is None
    assert result.updates.snapshot["probe_error"] == "connection refused"
    assert result.updates.snapshot["fingerprint"] == {"kind": "http", "url": "u", "value": None}
    assert result.events[0].detail["probe_error"] == "connection refused"


def test_without_a_probe_error_no_probe_error_key_is_written() -> None:
    result = record_snapshot(make_case(state=State.RECEIVED), **_no_probe())
    assert "probe_error" not in result.updates.snapshot
    assert "probe_error" not in result.events[0].detail


def test_recording_a_snapshot_does_not_change_the_case_spec() -> None:
    # Given a spec shared with the stored request / When snapshotted / Then it is not mutated
    spec = {"fingerprint": {"kind": "file", "path": "data.csv"}}
    record_snapshot(
        make_case(state=State.RECEIVED, snapshot=spec),
        fingerprint="f00d",
        probe_error=None,
        revoked=["t"],
        now=NOW,
    )
    assert spec == {"fingerprint": {"kind": "file", "path": "data.csv"}}


@pytest.mark.parametrize("state", other_states(State.RECEIVED))
def test_given_a_case_past_received_then_snapshot_is_refused(state: State) -> None:
    with pytest.raises(TransitionRefused):
        record_snapshot(make_case(state=state), **_no_probe())


# --- stages 2 and 3: validate and route ------------------------------------------------------


def test_given_a_medium_packet_when_routed_then_primary_and_marked_copy_are_queued() -> None:
    # Given a snapshotted medium case
    case = make_case()
    # When routed
    result = route_case(case, DESIGN, public_url=PUBLIC_URL, now=NOW)
    # Then the primary and its copy are outbound, the copy marked and naming the primary
    assert result.state is State.AWAITING
    assert [(o.purpose, o.channel, o.target, o.role) for o in result.outbound] == [
        ("notify", "apprise", "ops", "primary"),
        ("notify", "apprise", "ops-log", "copy"),
    ]
    primary, copy = result.outbound
    assert "COPY" not in primary.body
    assert "COPY for your information: ops decides this case." in copy.body
    assert copy.title.startswith("[copy] ")
    assert not primary.title.startswith("[copy]")
    assert (
        primary.body.splitlines()[0]
        == "Decision needed in run-8842, blocked since 2026-10-16T09:30:00+00:00."
    )
    # and each carries every form, so each channel's row gets the one it is read in
    chat = primary.payload["forms"]["chat"]
    assert chat["body"].splitlines()[0] == (
        "[escalate] blocked in run-8842 on 2026-10-16T09:30:00+00:00"
    )
    assert set(primary.payload["forms"]) == {"chat", "buttons", "push", "mail"}
    assert primary.payload["forms"]["mail"]["html"].startswith("<!DOCTYPE html>")
    assert result.updates == CaseUpdate(routed_at=NOW)
    assert result.next_stage == Stage.DELIVER
    assert result.decision is None


@pytest.mark.parametrize("severity", list(TIERS))
def test_given_each_severity_when_routed_then_the_tier_sets_window_and_facts(
    severity: str,
) -> None:
    # Given a packet at this severity, waiting as its tier says
    window, timeout, primary, copies, _, action = TIERS[severity]
    case = make_case(packet_for(severity))
    # When routed
    result = route_case(case, DESIGN, public_url=PUBLIC_URL, now=NOW)
    # Then it waits out the tier's window and the routed event states the tier's facts
    assert result.next_action_at == NOW + window
    assert kinds(result) == ["validated", "routed"]
    assert result.events[-1].detail == {
        "severity": severity,
        "primary": primary,
        "copies": copies,
        "window_seconds": window.total_seconds(),
        "timeout_seconds": timeout.total_seconds(),
        "timeout_action": action,
        "design": "example v3",
    }
    assert [o.target for o in result.outbound] == [primary, *copies]


@pytest.mark.parametrize("severity", list(TIERS))
def test_given_harm_risk_when_routed_then_the_timeout_action_is_abort(severity: str) -> None:
    # Given an irreversible action at any tier / Then nobody answering means abort (§2)
    case = make_case(packet_for(severity, trigger_type="harm_risk"))
    result = route_case(case, DESIGN, public_url=PUBLIC_URL, now=NOW)
    assert result.events[-1].detail["timeout_action"] == "abort"
    assert "the default applies: abort." in result.outbound[0].body


def test_given_a_waiting_behavior_unlike_the_tiers_then_a_waiting_differs_event() -> None:
    # Given a medium packet (tier: read_only) that says it will pause
    case = make_case(packet_for("medium", waiting_behavior="paused"))
    # When routed
    result = route_case(case, DESIGN, public_url=PUBLIC_URL, now=NOW)
    # Then the difference is recorded between validation and routing, and routing goes on
    assert kinds(result) == ["validated", "waiting_differs", "routed"]
    assert result.events[1].detail == {"packet": "paused", "design": "read_only"}
    assert result.state is State.AWAITING


def test_given_the_tiers_waiting_behavior_then_no_waiting_differs_event() -> None:
    result = route_case(make_case(), DESIGN, public_url=PUBLIC_URL, now=NOW)
    assert "waiting_differs" not in kinds(result)


def test_given_warnings_when_routed_then_they_are_recorded_on_validation() -> None:
    # Given a high packet with one evidence entry and no remaining work (accepted, warned)
    packet = packet_for("high", evidence=[{"kind": "log", "ref": "logs/a.log"}], remaining=[])
    # When routed
    result = route_case(make_case(packet), DESIGN, public_url=PUBLIC_URL, now=NOW)
    # Then
    assert result.events[0] == EventSpec(
        "validated",
        {
            "warnings": [
                "remaining: empty list, no remaining work stated",
                "severity high: only 1 evidence entry, 2 advised",
            ]
        },
    )
    assert result.state is State.AWAITING


def test_given_a_tier_without_copies_then_only_the_primary_is_notified() -> None:
    # Given the fast design, whose critical tier has no copies
    case = make_case(packet_for("critical"))
    result = route_case(case, FAST, public_url=PUBLIC_URL, now=NOW)
    assert [(o.target, o.role) for o in result.outbound] == [("oncall-pager", "primary")]
    assert result.next_action_at == NOW + timedelta(seconds=2)
    assert result.events[-1].detail["design"] == "example-fast v1"


@pytest.mark.parametrize("state", [State.SNAPSHOTTED, State.RECEIVED])
def test_given_a_packet_failing_its_checks_then_the_case_is_refused_and_cleared(
    state: State,
) -> None:
    # Given a stored packet that no longer passes (empty requested_action, critical + read_only)
    packet = {**packet_for("medium", requested_action=""), "severity": "critical"}
    # When routed
    result = route_case(make_case(packet, state=state), DESIGN, public_url=PUBLIC_URL, now=NOW)
    # Then nothing is sent, the problems are kept and the packet is cleared
    errors = [
        "requested_action: missing or empty",
        "severity critical: waiting_behavior must be paused or stopped",
    ]
    assert result.state is State.REFUSED
    assert result.events == (EventSpec("refused", {"errors": errors}),)
    assert result.updates == CaseUpdate(problems=tuple(errors), drop_packet=True)
    assert result.outbound == ()
    assert result.next_action_at is None
    assert result.next_stage is None


@pytest.mark.parametrize("state", other_states(State.SNAPSHOTTED))
def test_given_a_case_not_snapshotted_then_routing_is_refused(state: State) -> None:
    # Given a valid packet but a case that is not (or no longer) waiting to be routed
    with pytest.raises(TransitionRefused):
        route_case(make_case(state=state), DESIGN, public_url=PUBLIC_URL, now=NOW)


def test_routing_twice_gives_the_same_decision() -> None:
    # Given the same state, design and now / Then the stage is a pure function (safe to re-run)
    case = make_case()
    first = route_case(case, DESIGN, public_url=PUBLIC_URL, now=NOW)
    assert route_case(case, DESIGN, public_url=PUBLIC_URL, now=NOW) == first


def test_route_facts_names_the_tier_and_design() -> None:
    facts = route_facts(DESIGN, make_case(packet_for("high", trigger_type="harm_risk")))
    assert facts.severity == "high"
    assert facts.window == timedelta(minutes=15)
    assert facts.timeout == timedelta(hours=1)
    assert facts.timeout_action == "abort"
    assert facts.waiting_behavior == "paused"
    assert facts.design == "example v3"


# --- stage 4: the one follow-up --------------------------------------------------------------


def test_given_a_window_passed_when_following_up_then_primary_and_next_tier_are_paged() -> None:
    # Given a high case routed at NOW (tier high names critical as its next tier)
    case = make_case(packet_for("high"), state=State.AWAITING, routed_at=NOW)
    later = NOW + timedelta(minutes=15)
    # When the window passes
    result = follow_up(case, DESIGN, public_url=PUBLIC_URL, now=later)
    # Then exactly the primary and the next tier's primary, both citing the packet
    assert [(o.purpose, o.channel, o.target, o.role) for o in result.outbound] == [
        ("follow_up", "apprise", "oncall", "primary"),
        ("follow_up", "apprise", "oncall-pager", "next_tier"),
    ]
    for outbound in result.outbound:
        assert "esc-2026-10-16-005" in outbound.title
        assert outbound.body.splitlines()[1].startswith("FOLLOW-UP on packet esc-2026-10-16-005")
        assert "passed with no decision" in outbound.body
    assert "next tier" in result.outbound[1].body
    assert "next tier" not in result.outbound[0].body
    assert result.state is State.FOLLOWED_UP
    assert result.events == (
        EventSpec(
            "followed_up",
            {"cites": "esc-2026-10-16-005", "recipients": ["oncall", "oncall-pager"]},
        ),
    )
    # the timeout runs from when the case was routed, not from the follow-up
    assert result.next_action_at == NOW + timedelta(hours=1)
    assert result.updates == CaseUpdate(followed_up_at=later)
    assert result.next_stage == Stage.DELIVER


@pytest.mark.parametrize("severity", ["low", "medium", "critical"])
def test_given_a_tier_without_next_tier_then_only_the_primary_gets_the_follow_up(
    severity: str,
) -> None:
    # Given a tier with copies but no next tier / Then copies are not followed up
    window, timeout, primary, *_ = TIERS[severity]
    case = make_case(packet_for(severity), state=State.AWAITING, routed_at=NOW)
    result = follow_up(case, DESIGN, public_url=PUBLIC_URL, now=NOW + window)
    assert [(o.target, o.role) for o in result.outbound] == [(primary, "primary")]
    assert result.next_action_at == NOW + timeout


def test_given_a_next_tier_with_the_same_primary_then_one_follow_up_only() -> None:
    # Given high → critical where both tiers page the same tag
    design = design_with(critical={"recipient": {"primary": "oncall"}})
    case = make_case(packet_for("high"), state=State.AWAITING, routed_at=NOW)
    # When followed up / Then nobody is paged twice for the same point (§9)
    result = follow_up(case, design, public_url=PUBLIC_URL, now=NOW + timedelta(minutes=15))
    assert [(o.target, o.role) for o in result.outbound] == [("oncall", "primary")]


def test_given_a_late_follow_up_then_the_next_look_is_not_in_the_past() -> None:
    # Given the sweeper ran the follow-up after the whole timeout had already passed
    case = make_case(packet_for("high"), state=State.AWAITING, routed_at=NOW)
    late = NOW + timedelta(hours=3)
    result = follow_up(case, DESIGN, public_url=PUBLIC_URL, now=late)
    assert result.next_action_at == late


def test_given_no_routed_time_then_the_timeout_runs_from_now() -> None:
    case = make_case(packet_for("medium"), state=State.AWAITING)
    result = follow_up(case, DESIGN, public_url=PUBLIC_URL, now=NOW)
    assert result.next_action_at == NOW + timedelta(hours=2)


@pytest.mark.parametrize("state", other_states(State.AWAITING))
def test_given_a_case_not_awaiting_then_follow_up_is_refused(state: State) -> None:
    # Given a case already followed up (or not yet routed, or decided) / Then exactly one
    with pytest.raises(TransitionRefused):
        follow_up(make_case(state=state, routed_at=NOW), DESIGN, public_url=PUBLIC_URL, now=NOW)


# --- stage 5: the timeout default ------------------------------------------------------------


@pytest.mark.parametrize(
    ("severity", "action", "resumes"),
    [
        ("low", "skip", True),
        ("medium", "queue", True),
        ("high", "retry", True),
        ("critical", "abort", False),
    ],
)
@pytest.mark.parametrize("state", [State.FOLLOWED_UP, State.AWAITING])
def test_given_nobody_decided_when_timed_out_then_the_default_is_the_decision(
    state: State, severity: str, action: str, resumes: bool
) -> None:
    # Given an undecided case
    case = make_case(packet_for(severity), state=state, routed_at=NOW)
    later = NOW + TIERS[severity][1]
    # When the timeout passes
    result = apply_timeout(case, DESIGN, public_url=PUBLIC_URL, now=later)
    # Then the tier's default is recorded as a decision, marked as the system's default
    assert result.state is State.DECIDED
    assert result.decision == DecisionSpec(
        option=action,
        value=action,
        resumes=resumes,
        decided_by="system (timeout default)",
        channel="system",
        is_default=True,
    )
    assert result.events == (
        EventSpec(
            "timeout_default",
            {"action": action, "after_seconds": TIERS[severity][1].total_seconds()},
        ),
    )
    assert result.updates == CaseUpdate(decided_at=later)
    assert result.next_stage == Stage.CLOSE
    assert result.outbound == ()


@pytest.mark.parametrize("severity", list(TIERS))
def test_given_harm_risk_when_timed_out_then_abort_and_the_run_does_not_resume(
    severity: str,
) -> None:
    case = make_case(packet_for(severity, trigger_type="harm_risk"), state=State.FOLLOWED_UP)
    decision = apply_timeout(case, DESIGN, public_url=PUBLIC_URL, now=NOW).decision
    assert decision is not None
    assert (decision.value, decision.resumes, decision.is_default) == ("abort", False, True)
    assert decision.decided_by.startswith("system")


@pytest.mark.parametrize("state", other_states(State.AWAITING, State.FOLLOWED_UP))
def test_given_a_case_not_open_then_the_timeout_default_is_refused(state: State) -> None:
    # Given a case already decided by a human (or closed) / Then the default never overrides it
    with pytest.raises(TransitionRefused):
        apply_timeout(make_case(state=state), DESIGN, public_url=PUBLIC_URL, now=NOW)


# --- a human decision ------------------------------------------------------------------------


@pytest.mark.parametrize("state", [State.AWAITING, State.FOLLOWED_UP])
@pytest.mark.parametrize(
    "option", [Option("approve", "approve"), Option("deny", "deny", "stop", resumes=False)]
)
def test_given_an_open_case_when_a_human_decides_then_the_decision_is_recorded(
    state: State, option: Option
) -> None:
    case = make_case(state=state, routed_at=NOW)
    result = decide(case, option, responder="alice@example.org", channel="slack", now=NOW)
    assert result.state is State.DECIDED
    assert result.decision == DecisionSpec(
        option=option.label,
        value=option.value,
        resumes=option.resumes,
        decided_by="alice@example.org",
        channel="slack",
        is_default=False,
    )
    assert result.events == (
        EventSpec(
            "decided", {"option": option.label, "by": "alice@example.org", "channel": "slack"}
        ),
    )
    assert result.updates == CaseUpdate(decided_at=NOW)
    assert result.next_stage == Stage.CLOSE


def test_a_decision_keeps_label_and_value_apart() -> None:
    option = Option("Use the backup", "backup")
    result = decide(make_case(state=State.AWAITING), option, responder="b", channel="api", now=NOW)
    assert result.decision is not None
    assert (result.decision.option, result.decision.value) == ("Use the backup", "backup")


@pytest.mark.parametrize("state", other_states(State.AWAITING, State.FOLLOWED_UP))
def test_given_a_case_not_open_for_decision_then_deciding_is_refused(state: State) -> None:
    # Given a decided case / Then a second decision does not replace the first (§7 first wins)
    with pytest.raises(TransitionRefused):
        decide(
            make_case(state=state),
            Option("approve", "approve"),
            responder="x",
            channel="y",
            now=NOW,
        )


# --- stage 6: recheck and close --------------------------------------------------------------


@pytest.mark.parametrize(
    ("snapshot", "current", "probe_error", "expected"),
    [
        ({}, "abc", None, Recheck(None, "no fingerprint was recorded; nothing to recheck")),
        (
            {"fingerprint": None},
            None,
            None,
            Recheck(None, "no fingerprint was recorded; nothing to recheck"),
        ),
        (
            {"fingerprint": {"kind": "none", "value": None}},
            "x",
            "boom",
            Recheck(None, "no fingerprint was recorded; nothing to recheck"),
        ),
        (
            {"fingerprint": {"kind": "git", "path": ".", "value": "abc"}},
            "abc",
            None,
            Recheck(False, "unchanged: git . still abc"),
        ),
        (
            {"fingerprint": {"kind": "git", "path": ".", "value": "abc"}},
            "def",
            None,
            Recheck(True, "reconcile first: git . changed from abc to def"),
        ),
        (
            {"fingerprint": {"kind": "file", "path": "data.csv", "value": "f1"}},
            "f2",
            None,
            Recheck(True, "reconcile first: file data.csv changed from f1 to f2"),
        ),
        (
            {"fingerprint": {"kind": "http", "url": "https://svc/state", "value": "v1"}},
            None,
            "timeout after 5s",
            Recheck(
                True,
                "reconcile first: could not re-read http https://svc/state: timeout after 5s",
            ),
        ),
        (
            # a probe error wins even when the stale value happens to match
            {"fingerprint": {"kind": "git", "path": ".", "value": "abc"}},
            "abc",
            "git not found",
            Recheck(True, "reconcile first: could not re-read git .: git not found"),
        ),
    ],
)
def test_recheck_compares_the_snapshot_with_the_state_read_now(
    snapshot: dict[str, Any], current: str | None, probe_error: str | None, expected: Recheck
) -> None:
    assert recheck(snapshot, current, probe_error) == expected


def git_snapshot(value: str = "abc") -> dict[str, Any]:
    return {"fingerprint": {"kind": "git", "path": ".", "value": value}}


def decision_of(option: Option, *, by: str = "alice", default: bool = False) -> DecisionSpec:
    return DecisionSpec(option.label, option.value, option.resumes, by, "slack", default)


@pytest.mark.parametrize(
    ("resumes", "current", "probe_error", "outcome"),
    [
        (True, "abc", None, "decided"),
        (True, "def", None, "reconcile_first"),
        (True, None, "probe down", "reconcile_first"),
        # A stop needs no recheck: nothing acts on the changed state.
        (False, "abc", None, "decided"),
        (False, "def", None, "decided"),
        (False, None, "probe down", "decided"),
    ],
)
def test_given_a_decision_when_closed_then_the_outcome_follows_decision_and_recheck(
    resumes: bool, current: str | None, probe_error: str | None, outcome: str
) -> None:
    # Given a decided case with a git snapshot
    case = make_case(state=State.DECIDED, snapshot=git_snapshot())
    decision = decision_of(Option("go", "go", resumes=resumes))
    # When closed
    result = close_case(case, decision, current=current, probe_error=probe_error, now=NOW)
    # Then
    assert result.state is State.CLOSED
    assert result.updates == CaseUpdate(closed_at=NOW, outcome=outcome)
    close = result.events[0].detail
    assert close["outcome"] == outcome
    assert close["resumes"] is resumes
    assert close["resume_at"] == (NOW.isoformat() if resumes else None)
    expected_discarded = [] if resumes else case.packet["remaining"]
    assert close["work_discarded"] == expected_discarded


def test_given_no_fingerprint_then_a_resuming_decision_resumes() -> None:
    case = make_case(state=State.DECIDED)
    result = close_case(
        case, decision_of(Option("approve", "approve")), current=None, probe_error=None, now=NOW
    )
    assert result.updates.outcome == "decided"
    assert result.events[0].detail["recheck"] == "no fingerprint was recorded; nothing to recheck"


def test_given_a_changed_state_then_the_close_entry_says_reconcile_first_and_what_changed() -> None:
    case = make_case(state=State.DECIDED, snapshot=git_snapshot("abc"))
    decision = decision_of(Option("approve", "approve"))
    result = close_case(case, decision, current="def", probe_error=None, now=NOW)
    assert result.events == (
        EventSpec(
            "closed",
            {
                "option": "approve",
                "value": "approve",
                "decided_by": "alice",
                "channel": "slack",
                "is_default": False,
                "default_action": None,
                "outcome": "reconcile_first",
                "resumes": True,
                "recheck": "reconcile first: git . changed from abc to def",
                "resume_at": "2026-10-16T09:30:00+00:00",
                "clears": case.packet["blocked_on"],
                "work_discarded": [],
                "reasons": [],
            },
        ),
    )


def test_given_a_stop_then_the_remaining_work_is_discarded_and_nothing_resumes() -> None:
    case = make_case(state=State.DECIDED, snapshot=git_snapshot())
    decision = decision_of(Option("deny", "deny", resumes=False))
    close = close_case(case, decision, current="abc", probe_error=None, now=NOW).events[0].detail
    assert close["outcome"] == "decided" and close["resumes"] is False
    assert close["resume_at"] is None
    assert close["work_discarded"] == [
        "Decide the 3 orphan records.",
        "Verify totals match source.",
    ]
    # the decision clears the one point it was asked about, nothing wider (§3.6)
    assert close["clears"] == case.packet["blocked_on"]


def test_given_a_timeout_default_then_the_close_entry_marks_it_as_a_default() -> None:
    case = make_case(state=State.DECIDED)
    decision = DecisionSpec("skip", "skip", True, "system (timeout default)", "system", True)
    close = close_case(case, decision, current=None, probe_error=None, now=NOW).events[0].detail
    assert close["is_default"] is True
    assert close["outcome"] == "defaulted" and close["default_action"] == "skip"
    assert close["decided_by"] is None  # a default is never shown as a person's decision


def test_given_task_and_webhook_wakes_then_both_are_queued_with_the_close_payload() -> None:
    # Given a case that asked to be woken by task and by webhook
    wake = {"task": "agent.resume", "webhook": "https://agent.example/wake", "fallback_file": "B"}
    case = make_case(state=State.DECIDED, snapshot=git_snapshot(), wake=wake)
    # When closed
    result = close_case(
        case, decision_of(Option("approve", "approve")), current="abc", probe_error=None, now=NOW
    )
    # Then one outbound per wake channel, both carrying the close entry and the ids
    close = result.events[0].detail
    payload = {
        "escalation_id": CASE_ID,
        "run_id": "run-8842",
        "packet_id": "esc-2026-10-16-005",
        **close,
    }
    # The task goes to Celery's default queue, as no queue was named: never the service's
    assert result.outbound == (
        Outbound("wake_task", "celery", "agent.resume", payload=payload, queue="celery"),
        Outbound("wake_webhook", "webhook", "https://agent.example/wake", payload=payload),
    )
    assert result.next_stage == Stage.DELIVER


def test_given_a_wake_queue_then_the_wake_task_goes_to_that_queue() -> None:
    # Given a case whose run's worker consumes its own queue
    wake = {"task": "agent.resume", "queue": "agent-7"}
    case = make_case(state=State.DECIDED, snapshot=git_snapshot(), wake=wake)
    # When closed
    result = close_case(
        case, decision_of(Option("approve", "approve")), current="abc", probe_error=None, now=NOW
    )
    # Then the wake task is addressed to that queue
    [wake_task] = result.outbound
    assert (wake_task.target, wake_task.queue) == ("agent.resume", "agent-7")


@pytest.mark.parametrize("wake", [{}, {"fallback_file": "BLOCKED.md"}, {"task": None}])
def test_given_no_wake_channel_then_nothing_is_queued(wake: dict[str, Any]) -> None:
    case = make_case(state=State.DECIDED, wake=wake)
    result = close_case(
        case, decision_of(Option("approve", "approve")), current=None, probe_error=None, now=NOW
    )
    assert result.outbound == ()
    assert result.next_stage is None
    assert result.state is State.CLOSED


def test_given_only_a_task_wake_then_only_the_task_is_queued() -> None:
    case = make_case(state=State.DECIDED, wake={"task": "agent.resume"})
    result = close_case(
        case, decision_of(Option("approve", "approve")), current=None, probe_error=None, now=NOW
    )
    assert [(o.purpose, o.target) for o in result.outbound] == [("wake_task", "agent.resume")]


@pytest.mark.parametrize("state", other_states(State.DECIDED))
def test_given_a_case_not_decided_then_closing_is_refused(state: State) -> None:
    with pytest.raises(TransitionRefused):
        close_case(
            make_case(state=state),
            decision_of(Option("approve", "approve")),
            current=None,
            probe_error=None,
            now=NOW,
        )


# --- the whole walk, stage after stage -------------------------------------------------------


def test_a_case_nobody_answers_walks_from_received_to_closed() -> None:
    # Given an accepted high case with a git snapshot and a task wake
    case = make_case(
        packet_for("high"),
        state=State.RECEIVED,
        snapshot={"fingerprint": {"kind": "git", "path": "."}},
        wake={"task": "agent.resume"},
    )
    # When every stage runs on the case as the previous one left it
    snap = record_snapshot(case, fingerprint="abc", probe_error=None, revoked=[], now=NOW)
    case = dataclasses.replace(case, state=snap.state, snapshot=snap.updates.snapshot)
    routed = route_case(case, DESIGN, public_url=PUBLIC_URL, now=NOW)
    case = dataclasses.replace(case, state=routed.state, routed_at=routed.updates.routed_at)
    assert routed.next_action_at is not None
    followed = follow_up(case, DESIGN, public_url=PUBLIC_URL, now=routed.next_action_at)
    case = dataclasses.replace(case, state=followed.state)
    assert followed.next_action_at is not None
    timed_out = apply_timeout(case, DESIGN, public_url=PUBLIC_URL, now=followed.next_action_at)
    case = dataclasses.replace(case, state=timed_out.state)
    assert timed_out.decision is not None
    closed = close_case(case, timed_out.decision, current="abc", probe_error=None, now=NOW)
    # Then the case closes on the tier's default, resumes, and the run is woken once
    assert [snap.state, routed.state, followed.state, timed_out.state, closed.state] == [
        State.SNAPSHOTTED,
        State.AWAITING,
        State.FOLLOWED_UP,
        State.DECIDED,
        State.CLOSED,
    ]
    assert routed.next_action_at == NOW + timedelta(minutes=15)
    assert followed.next_action_at == NOW + timedelta(hours=1)
    assert closed.events[0].detail["outcome"] == "defaulted"
    assert closed.events[0].detail["value"] == "retry"
    assert [o.purpose for o in closed.outbound] == ["wake_task"]


# --- a delivery that keeps failing -----------------------------------------------------------


@pytest.mark.parametrize(
    ("severity", "waiting", "bumped", "bumped_waiting"),
    [
        ("low", "safe_subset", "medium", "safe_subset"),
        ("medium", "read_only", "high", "read_only"),
        ("medium", "stopped", "high", "stopped"),
        ("high", "paused", "critical", "paused"),
        ("high", "stopped", "critical", "stopped"),
        ("high", "read_only", "critical", "paused"),
        ("high", "safe_subset", "critical", "paused"),
        ("critical", "stopped", "critical", "stopped"),
        ("critical", "paused", "critical", "paused"),
    ],
)
def test_given_an_undeliverable_packet_then_a_second_one_goes_one_tier_up(
    severity: str, waiting: str, bumped: str, bumped_waiting: str
) -> None:
    # Given a first packet that could not be delivered
    case = make_case(packet_for(severity, waiting_behavior=waiting), state=State.AWAITING)
    # When the failure is escalated
    second = delivery_failure_packet(case, target="oncall", attempts=5, error="HTTP 503")
    # Then it is one tier more severe, and a critical one never keeps working (§9)
    assert second is not None
    assert (second["severity"], second["waiting_behavior"]) == (bumped, bumped_waiting)
    # and it passes the same checks every packet passes, secrets included
    result = check_packet(second, find_secrets=find_secrets)
    assert result.errors == ()


def test_the_second_packet_cites_the_first_packet_and_case() -> None:
    case = make_case(packet_for("medium"), state=State.AWAITING)
    second = delivery_failure_packet(
        case, target="ops", attempts=4, error="connection reset\nby peer"
    )
    assert second is not None
    assert second["packet_id"] == "esc-2026-10-16-005-undelivered"
    assert second["run_id"] == "run-8842"
    assert second["trigger_type"] == "tool_failure"
    assert second["recipient"] == "data-ops"
    assert second["trigger_detail"] == (
        f"Notification for packet esc-2026-10-16-005 (case {CASE_ID}) to 'ops' was not "
        "confirmed after 4 attempts; last error: connection reset by peer"
    )
    assert "esc-2026-10-16-005" in second["blocked_on"]
    assert CASE_ID in second["requested_action"]
    assert "'ops'" in second["requested_action"]
    assert second["evidence"] == [{"kind": "log", "ref": f"escalation {CASE_ID} events"}]
    assert second["attempted"] == ["Sent to 'ops' 4 times with exponential backoff."]
    assert second["remaining"] == [f"Decide case {CASE_ID}: {case.packet['requested_action']}"]
    assert CASE_ID in second["resume_condition"]


def test_given_a_case_that_already_cites_another_then_no_third_packet() -> None:
    # Given the failure notice itself could not be delivered / Then it is not escalated again
    case = make_case(packet_for("critical"), state=State.AWAITING, cites_id="9e8d7c6b5a40")
    assert delivery_failure_packet(case, target="oncall-pager", attempts=5, error="down") is None


def test_building_the_second_packet_leaves_the_first_unchanged() -> None:
    packet = packet_for("high", waiting_behavior="read_only")
    before = dict(packet)
    delivery_failure_packet(make_case(packet), target="t", attempts=1, error="e")
    assert packet == before


def test_a_hold_tier_decides_nothing_and_pages_the_tiers_above() -> None:
    # Given a medium tier that holds, escalating to high (whose next tier is critical)
    design = design_with(medium={"timeout_default": "hold", "next_tier": "high"})
    case = make_case(state=State.FOLLOWED_UP, packet={**valid_packet(), "severity": "medium"})
    # When its timeout passes
    result = apply_timeout(case, design, public_url=PUBLIC_URL, now=NOW)
    # Then no decision is made and the case waits on, with no deadline of its own
    assert result.decision is None
    assert result.state is State.FOLLOWED_UP and result.next_action_at is None
    # And the tier above the follow-up's (critical's pager) is paged once, nobody twice
    assert [(o.purpose, o.target, o.role) for o in result.outbound] == [
        ("follow_up", "oncall-pager", "next_tier")
    ]
    assert kinds(result) == ["held"]
    assert result.events[0].detail["paged"] == ["oncall-pager"]


def test_a_hold_tier_says_nothing_is_applied_in_its_notification() -> None:
    design = design_with(medium={"timeout_default": "hold"})
    case = make_case(state=State.SNAPSHOTTED, packet={**valid_packet(), "severity": "medium"})
    result = route_case(case, design, public_url=PUBLIC_URL, now=NOW)
    body = result.outbound[0].body
    assert "nothing is applied: the tiers above are paged and the run waits for a person" in body
    assert "the default applies" not in body
