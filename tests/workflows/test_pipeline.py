"""Pipeline profile (SPEC §6): what the caps allow, the advisory, and the packet built."""

from __future__ import annotations

import json
from typing import Any

import pytest

from workflows.case import parse_options
from workflows.errors import PipelineStateError
from workflows.intake import admit
from workflows.pipeline import (
    NUCLEAR_WARNING,
    Counters,
    advisory,
    charge,
    command_record,
    diagnostics,
    escalation_request,
    executable,
    offer,
    packet_id,
    redacted,
)
from workflows.pipeline_state import (
    ABSENT,
    MALFORMED,
    READ,
    STATE_FILES,
    interpret,
    read_state_file,
)
from workflows.replies import parse_reply
from workflows.secrets import find_secrets, scan_text

RESETS = {"RESET_EXECUTION", "RESET_PHASE", "RESET_REVIEWER"}


def expected_offer(resets: int, nuclear: int) -> list[str]:
    """SPEC §6 written out independently of workflows/pipeline.py."""
    if resets < 3:
        return ["RESET_EXECUTION", "RESET_PHASE", "RESET_REVIEWER", "PROCEED", "STOP"]
    return ["PROCEED", "STOP"] + (["NUCLEAR_RESET"] if nuclear < 2 else [])


@pytest.mark.parametrize("resets", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("nuclear", [0, 1, 2])
def test_offered_commands_follow_the_caps(resets: int, nuclear: int) -> None:
    chosen = offer(Counters(resets, nuclear))
    assert list(chosen.offered) == expected_offer(resets, nuclear)
    assert "SKIP" not in chosen.offered and "RESTART PHASE" not in chosen.offered
    assert chosen.cap_reached == (resets >= 3)
    if resets >= 3:
        assert "Reset cap reached" in chosen.note
        assert set(chosen.accepted) == set(chosen.offered)  # SKIP and resets do not execute
    else:
        assert set(chosen.accepted) == set(chosen.offered) | {"SKIP"}
        assert f"{3 - resets} of 3 resets left" in chosen.note


@pytest.mark.parametrize("resets", [0, 1, 2, 3])
@pytest.mark.parametrize("nuclear", [0, 1, 2])
def test_replies_execute_only_what_the_caps_allow(resets: int, nuclear: int) -> None:
    chosen = offer(Counters(resets, nuclear))
    options = parse_options(
        [{"label": c, "value": c, "destructive": c == "NUCLEAR_RESET"} for c in chosen.offered]
    )

    def decided(text: str) -> str | None:
        match = parse_reply(text, options, pipeline=True, allowed_commands=chosen.accepted)
        return match.command if match.decides else None

    for command in RESETS:
        assert decided(command) == (command if resets < 3 else None)
    # RESTART PHASE is RESET_PHASE's alias; SKIP counts only when typed, under the cap
    assert decided("restart phase") == ("RESET_PHASE" if resets < 3 else None)
    assert decided("SKIP") == ("SKIP" if resets < 3 else None)  # charge() holds it at decision
    assert decided("proceed") == "PROCEED" and decided("stop") == "STOP"
    nuclear_allowed = resets >= 3 and nuclear < 2
    assert decided("CONFIRM NUCLEAR_RESET") == ("NUCLEAR_RESET" if nuclear_allowed else None)
    assert decided("NUCLEAR_RESET") is None  # always needs CONFIRM


@pytest.mark.parametrize("resets", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("nuclear", [0, 1, 2])
def test_charging_a_command_counts_it_once_and_never_past_a_cap(resets: int, nuclear: int) -> None:
    counters = Counters(resets, nuclear)
    for command in RESETS:
        after = charge(counters, command)
        assert after == (Counters(resets + 1, nuclear) if resets < 3 else None)
    after = charge(counters, "NUCLEAR_RESET")
    assert after == (Counters(resets, nuclear + 1) if resets >= 3 and nuclear < 2 else None)
    for command in ("PROCEED", "STOP"):
        assert charge(counters, command) == counters
    # SKIP is typed, never offered, and past the cap it does not execute either
    assert charge(counters, "SKIP") == (counters if resets < 3 else None)
    offered = ("RESET_EXECUTION", "RESET_PHASE", "RESET_REVIEWER", "PROCEED", "STOP", "SKIP")
    assert executable(counters, offered) == (list(offered) if resets < 3 else ["PROCEED", "STOP"])


def test_a_stale_file_never_lowers_the_service_count() -> None:
    assert Counters(3, 1).merged(Counters(1, 0)) == Counters(3, 1)
    assert Counters(0, 0).merged(Counters(2, 1)) == Counters(2, 1)


def readings(**files: Any) -> dict[str, Any]:
    """Each state file as bytes (text or an object), absent unless given."""
    out = {}
    for name in STATE_FILES:
        value = files.get(name.removesuffix(".json"))
        raw = None if value is None else value if isinstance(value, bytes) else json.dumps(value)
        out[name] = read_state_file(name, raw.encode() if isinstance(raw, str) else raw)
    return out


PHASE_STATE = {
    "phase": 4,
    "executor_retries": 3,
    "reviewer_retries": 1,
    "planner_retries": 0,
    "escalation_resets": 1,
    "nuclear_resets": 0,
    "escalation_trigger_reason": "executor retries exhausted",
}


def test_state_files_are_read_noted_absent_or_reported_malformed() -> None:
    found = readings(
        phase_state=PHASE_STATE,
        current_phase={"phase": 4, "description": "Add auth middleware"},
        executor_output=b"{not json",
        reviewer_output=[1, 2],
    )
    assert found["phase_state.json"].status == READ
    assert found["failure_context.json"].status == ABSENT
    assert found["executor_output.json"].status == MALFORMED
    assert "not JSON" in str(found["executor_output.json"].error)
    assert found["reviewer_output.json"].error == "must hold a JSON object, not a list"
    state = interpret(found, pipeline_id="payments", default_pipeline="/x")
    assert (state.pipeline_id, state.phase, state.phase_title) == (
        "payments",
        "4",
        "Add auth middleware",
    )
    assert state.component == "executor"  # named by the trigger reason
    assert dict(state.retries) == {"executor": 3, "reviewer": 1}
    assert (state.resets, state.nuclear) == (1, 0)


@pytest.mark.parametrize(
    ("files", "problem"),
    [
        ({}, "phase_state.json: required, but not in the state folder"),
        ({"phase_state": b"[1"}, "phase_state.json: not JSON"),
        ({"phase_state": b"\xff\xfe"}, "phase_state.json: not UTF-8 text"),
    ],
)
def test_the_required_file_is_needed(files: dict[str, Any], problem: str) -> None:
    with pytest.raises(PipelineStateError) as refused:
        interpret(readings(**files), pipeline_id=None, default_pipeline="/x")
    assert refused.value.problems[0].startswith(problem)


# lullabeast's orchestrator, as it writes its folder: no phase in phase_state.json.
LULLABEAST_PHASE_STATE = {
    "planner_retries": 0,
    "executor_retries": 3,
    "reviewer_retries": 0,
    "reviewer_rejected": False,
    "escalation_resets": 1,
    "nuclear_resets": 0,
    "escalation_trigger_reason": "executor retries exhausted",
    "last_error_code": "ERR_TESTS_FAILED",
    "escalation_reply_token": "e1.ab12cd",
}
LULLABEAST_CURRENT_PHASE = {
    "phase_number": 4,
    "raw_id": "CORE-4",
    "detail": "Add auth middleware",
    "category": "CORE",
    "exit_criteria": "All routes require a session",
}
LULLABEAST_FAILURE = {
    "timestamp": "2026-05-29T00:00:00Z",
    "phase_raw_id": "CORE-4",
    "failing_agent": "executor",
    "attempt_number": 4,
    "gate_error_codes": ["ERR_VALIDATION_FAILED", "ERR_TESTS_FAILED"],
    "agent_status": "failed",
    "agent_failure_reason": "middleware import cycle",
    "blocking_issues": [],
    "tests_written": ["tests/test_auth.py", "tests/test_session.py"],
    "tests_passing": False,
    "file_manifest": ["app/auth.py", "app/session.py"],
    "files_present_on_disk": ["app/auth.py", "tests/test_auth.py"],
}


def test_phase_state_json_alone_is_enough_for_a_lullabeast_escalation() -> None:
    state = interpret(
        readings(phase_state={"escalation_resets": 0}), pipeline_id=None, default_pipeline="/x"
    )
    assert state.phase == "unknown" and "counted as 'unknown'" in state.notes[0]
    assert offer(Counters(state.resets, state.nuclear)).offered[0] == "RESET_EXECUTION"


def test_lullabeast_names_are_read_from_every_state_file() -> None:
    state = interpret(
        readings(
            phase_state=LULLABEAST_PHASE_STATE,
            current_phase=LULLABEAST_CURRENT_PHASE,
            failure_context=LULLABEAST_FAILURE,
            reviewer_output={"verdict": "rejected", "blocking_issues": ["no session check"]},
        ),
        pipeline_id="payments",
        default_pipeline="/x",
    )
    assert (state.phase, state.raw_id, state.phase_title) == ("4", "CORE-4", "Add auth middleware")
    assert (state.category, state.exit_criteria) == ("CORE", "All routes require a session")
    assert state.component == "executor" and state.attempt == "4"
    assert state.gate_errors == ("ERR_VALIDATION_FAILED", "ERR_TESTS_FAILED")
    assert state.failure == "middleware import cycle"
    assert state.failure_reasons == ("executor: middleware import cycle",)
    assert state.tests_written == ("tests/test_auth.py", "tests/test_session.py")
    assert state.tests_passing is False
    assert state.reply_token == "e1.ab12cd"
    found = diagnostics(state)
    assert found[0] == "Phase: 4 [CORE-4] — Add auth middleware (category: CORE)"
    assert "Gate error codes: ERR_VALIDATION_FAILED, ERR_TESTS_FAILED" in found
    assert "Agent failure_reason, executor: middleware import cycle" in found
    assert "Tests: 2 written (tests/test_auth.py, tests/test_session.py); NOT passing" in found
    assert (
        "Files: 2 in file_manifest, 2 on disk; in the manifest but not on disk: app/session.py"
        in found
    )


def test_the_phase_comes_from_current_phase_json_by_number_or_raw_id() -> None:
    for current, phase in [({"phase_number": 7}, "7"), ({"raw_id": "UI-2"}, "UI-2")]:
        state = interpret(
            readings(phase_state={}, current_phase=current), pipeline_id=None, default_pipeline="/x"
        )
        assert state.phase == phase and not state.notes


def test_a_reply_token_of_another_shape_is_noted_and_not_used() -> None:
    state = interpret(
        readings(phase_state={"phase": 1, "escalation_reply_token": "hello world"}),
        pipeline_id=None,
        default_pipeline="/x",
    )
    assert state.reply_token is None and "not token-shaped" in state.notes[0]


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("three", "text"),
        ("²", "text"),
        (-1, "a number"),
        (2.5, "a number"),
        (10**19, "a number"),
        (True, "true/false"),
        ([3], "a list"),
    ],
)
def test_a_cap_counter_the_service_cannot_read_refuses_by_name(value: object, kind: str) -> None:
    # Read as 0 it would offer resets the pipeline may have spent; the value is never echoed
    for key in ("escalation_resets", "nuclear_resets"):
        with pytest.raises(PipelineStateError) as refused:
            interpret(
                readings(phase_state={"phase": 2, key: value}),
                pipeline_id=None,
                default_pipeline="/x",
            )
        assert refused.value.problems == [
            f"phase_state.json: {key} must be a count from 0 to 1000000, not {kind}"
        ]


@pytest.mark.parametrize("value", [3, 3.0, "3", " 3 "])
def test_counts_are_read_as_orchestrators_write_them(value: object) -> None:
    state = interpret(
        readings(phase_state={"phase": 2, "escalation_resets": value, "nuclear_resets": None}),
        pipeline_id=None,
        default_pipeline="/x",
    )
    assert (state.resets, state.nuclear) == (3, 0)


def test_an_unusable_retry_counter_is_noted_without_its_value() -> None:
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    state = interpret(
        readings(phase_state={"phase": "2", "executor_retries": secret}),
        pipeline_id=None,
        default_pipeline="/runs/p1",
    )
    assert state.pipeline_id == "/runs/p1" and dict(state.retries) == {}
    assert state.notes == ("phase_state.json: executor_retries is text, not a count; left out",)


@pytest.mark.parametrize(
    ("files", "component"),
    [
        ({"failure_context": {"component": "Reviewer"}}, "reviewer"),
        ({"phase_state": {"phase": 1, "reviewer_rejected": True}}, "executor"),
        ({"planner_output": {"status": "failed"}}, "planner"),
        ({"phase_state": {"phase": 1, "escalation_trigger_reason": "gate failed"}}, None),
    ],
)
def test_the_failing_part_is_found_where_the_files_say(
    files: dict[str, Any], component: str | None
) -> None:
    files = {"phase_state": {"phase": 1}, **files}
    state = interpret(readings(**files), pipeline_id="p", default_pipeline="/x")
    assert state.component == component


@pytest.mark.parametrize(
    ("component", "counters", "recommended"),
    [
        ("executor", Counters(0, 0), "RESET_EXECUTION"),
        ("planner", Counters(1, 0), "RESET_PHASE"),
        ("reviewer", Counters(2, 0), "RESET_REVIEWER"),
        (None, Counters(0, 0), "STOP"),
        ("executor", Counters(3, 0), "STOP"),
        ("executor", Counters(3, 2), "STOP"),
    ],
)
def test_the_advisory_recommends_an_offered_command_within_200_characters(
    component: str | None, counters: Counters, recommended: str
) -> None:
    failure = {"component": component, "error": "pytest: 14 failed " * 30} if component else {}
    state = interpret(
        readings(phase_state={"phase": 3}, failure_context=failure),
        pipeline_id="p" * 150,
        default_pipeline="/x",
    )
    chosen = offer(counters)
    advice = advisory(state, chosen)
    assert set(advice) == {"summary", "recommended_action"}
    assert all(0 < len(text) <= 200 for text in advice.values())
    assert advice["recommended_action"].split(":")[0] == recommended
    assert recommended in chosen.offered


def build(counters: Counters, **files: Any) -> dict[str, Any]:
    files = {"phase_state": PHASE_STATE, **files}
    state = redacted(
        interpret(readings(**files), pipeline_id="payments", default_pipeline="/x"), scan_text
    )
    return escalation_request(
        state,
        counters,
        offer(counters),
        state_dir="/runs/payments",
        number=2,
        severity="high",
        recipient="pipeline operator",
        wake={"command_file": "/runs/payments/command.json"},
    )


def test_the_request_passes_intake_and_offers_exactly_the_commands() -> None:
    request = build(Counters(3, 1), failure_context={"gate_errors": ["lint: 3 errors"]})
    admission = admit(request, find_secrets=find_secrets)
    assert admission.accepted, admission.problems
    packet = admission.packet
    assert packet["packet_id"] == "payments:phase-4:escalation-2"
    assert [o.label for o in admission.options] == ["PROCEED", "STOP", "NUCLEAR_RESET"]
    nuclear = admission.options[2]
    assert nuclear.destructive and NUCLEAR_WARNING in nuclear.description
    assert len(nuclear.description) <= 120  # a notification shows 120 characters of it
    assert not admission.options[1].resumes  # STOP halts
    assert "Reset cap reached (3 of 3 used)" in packet["requested_action"]
    assert "Gate errors: lint: 3 errors." in packet["trigger_detail"]
    assert {"kind": "test", "ref": "gate: lint: 3 errors"} in packet["evidence"]
    assert "executor retried 3 times" in packet["attempted"]


def test_a_secret_in_the_state_files_is_withheld_not_refused() -> None:
    leak = "connect failed: postgres://app:s3cr3t-Pa55w0rd@db.internal:5432/prod"
    request = build(Counters(0, 0), failure_context={"error": leak})
    assert "s3cr3t" not in json.dumps(request)
    assert "[withheld: contains a secret" in request["packet"]["trigger_detail"]
    assert admit(request, find_secrets=find_secrets).accepted


def test_packet_ids_stay_distinct_and_short_however_long_the_names() -> None:
    ids = {packet_id("p" * 195, "4", n) for n in range(1, 50)}
    assert len(ids) == 49 and all(len(i) <= 200 for i in ids)
    assert packet_id("p" * 195, "4", 1) != packet_id("p" * 195, "5", 1)
    assert packet_id("checkout", "3", 2) == "checkout:phase-3:escalation-2"


def test_the_command_file_carries_the_operators_reasons() -> None:
    why = [{"what": "extended", "who": "api:bo", "when": "t", "why": "vendor", "minutes": 15}]
    record = command_record(
        "c1", {"pipeline_id": "p", "phase": "2"}, {"value": "PROCEED", "reasons": why},
        closed_at="t",
    )  # fmt: skip
    assert record["reasons"] == why and record["command"] == "PROCEED"
    assert command_record("c1", {}, {"value": "STOP"}, closed_at="t")["reasons"] == []
