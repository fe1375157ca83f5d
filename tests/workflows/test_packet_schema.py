"""The packet's one schema: pydantic's errors in the SPEC's words and order (SPEC §1)."""

from __future__ import annotations

from pydantic_core import SchemaValidator

from workflows.examples import valid_packet
from workflows.packet_schema import Problem, packet_schema, problems_of


def test_given_a_valid_packet_then_no_problem() -> None:
    assert problems_of(valid_packet()) == []


def test_given_errors_in_field_order_then_they_come_in_the_spec_order() -> None:
    # Given: severity comes before resume_condition in the packet, after it in the SPEC's list
    packet = {**valid_packet(), "severity": "urgent", "resume_condition": " ", "remaining": 7}
    # When
    problems = problems_of(packet)
    # Then
    assert [problem.line() for problem in problems] == [
        "resume_condition: missing or empty",
        "severity: bad value 'urgent'",
        "remaining: missing or not a list",
    ]


def test_given_an_evidence_entry_with_two_faults_then_only_its_first_counts() -> None:
    packet = {**valid_packet(), "evidence": [{"kind": "video", "ref": ""}, {"ref": "x"}]}
    assert problems_of(packet) == [
        Problem("evidence", "bad kind 'video'", 0),
        Problem("evidence", "bad kind None", 1),
    ]


def test_given_not_an_object_then_one_problem_without_a_field() -> None:
    assert [problem.line() for problem in problems_of(["packet"])] == [
        "packet is not a JSON object"
    ]


def test_given_intake_then_recipient_and_waiting_behavior_may_be_left_to_the_design() -> None:
    # Given: the packet as intake takes it, and as the checks take it
    packet = {**valid_packet(), "waiting_behavior": None}
    del packet["recipient"]
    # When / Then
    SchemaValidator(packet_schema(design_filled=True)).validate_python(packet)
    assert [problem.line() for problem in problems_of(packet)] == [
        "recipient: missing or empty",
        "waiting_behavior: bad value None",
    ]
