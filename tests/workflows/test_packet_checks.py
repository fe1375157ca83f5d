"""The packet checks and the report, against the texts of SPEC §1."""

from __future__ import annotations

from typing import Any

import pytest

from workflows.examples import incomplete_packet, valid_packet
from workflows.packet_checks import check_packet, render_report


def report_of(packet: object) -> list[str]:
    return render_report(check_packet(packet)).splitlines()


def errors_of(packet: object) -> list[str]:
    return check_packet(packet).error_lines()


def with_changes(**changes: Any) -> dict[str, Any]:
    packet = valid_packet()
    for name, value in changes.items():
        if value is ...:
            del packet[name]
        else:
            packet[name] = value
    return packet


def test_valid_example_passes_with_the_exact_report() -> None:
    # Given the valid worked example / When checked / Then the report is line for line
    assert report_of(valid_packet()) == [
        "packet_id: esc-2026-10-16-005",
        "run_id: run-8842",
        "severity: medium",
        "trigger_type: uncertain",
        "waiting_behavior: read_only",
        "attempted: 2",
        "completed: 2",
        "remaining: 2",
        "evidence_entries: 2",
        "errors: 0",
        "warnings: 0",
        "verdict: PASS",
    ]


def test_incomplete_example_fails_with_two_errors() -> None:
    assert report_of(incomplete_packet()) == [
        "packet_id: esc-2026-10-16-004",
        "run_id: run-8841",
        "severity: high",
        "trigger_type: blocked",
        "waiting_behavior: paused",
        "attempted: 1",
        "completed: 2",
        "remaining: 2",
        "evidence_entries: 0",
        "errors: 2",
        "  error: requested_action: missing or empty",
        "  error: evidence: missing, not a list, or empty",
        "warnings: 0",
        "verdict: FAIL",
    ]


@pytest.mark.parametrize(
    ("changes", "expected_errors"),
    [
        ({"packet_id": ...}, ["packet_id: missing or empty"]),
        ({"run_id": "   "}, ["run_id: missing or empty"]),
        ({"task_summary": 42}, ["task_summary: missing or empty"]),
        ({"resume_condition": None}, ["resume_condition: missing or empty"]),
        ({"severity": "urgent"}, ["severity: bad value 'urgent'"]),
        ({"severity": ...}, ["severity: bad value None"]),
        ({"trigger_type": "stuck"}, ["trigger_type: bad value 'stuck'"]),
        ({"waiting_behavior": 3}, ["waiting_behavior: bad value 3"]),
        ({"attempted": "tried it"}, ["attempted: missing or not a list"]),
        ({"attempted": []}, ["attempted: empty list"]),
        (
            {"attempted": ["ok", "", 7]},
            ["attempted: entry is empty or not a string"] * 2,
        ),
        ({"completed": ...}, ["completed: missing or not a list"]),
        ({"remaining": {"a": 1}}, ["remaining: missing or not a list"]),
        ({"completed": [" "]}, ["completed: entry is empty or not a string"]),
        ({"evidence": ...}, ["evidence: missing, not a list, or empty"]),
        ({"evidence": "logs/x"}, ["evidence: missing, not a list, or empty"]),
        ({"evidence": [{"kind": "log", "ref": "a"}, "b"]}, ["evidence: entry is not an object"]),
        (
            {"evidence": [{"kind": "video", "ref": "a"}, {"kind": "log", "ref": ""}]},
            ["evidence: bad kind 'video'", "evidence: ref is empty"],
        ),
        (
            {"evidence": [{"ref": "  "}]},
            ["evidence: bad kind None"],  # an entry's first fault only, as the reference
        ),
        (
            {"severity": "critical", "waiting_behavior": "read_only"},
            ["severity critical: waiting_behavior must be paused or stopped"],
        ),
    ],
)
def test_each_malformed_field_gets_its_fixed_error_text(
    changes: dict[str, Any], expected_errors: list[str]
) -> None:
    assert errors_of(with_changes(**changes)) == expected_errors


def test_errors_come_in_spec_order() -> None:
    # Given a packet wrong in many places at once
    packet = with_changes(
        packet_id="",
        resume_condition="",
        severity="critical",
        trigger_type="nope",
        waiting_behavior="read_only",
        attempted=[],
        completed="x",
        remaining=None,
        evidence=[],
    )
    # Then errors list required strings, enums, lists, evidence, then the critical rule
    assert errors_of(packet) == [
        "packet_id: missing or empty",
        "resume_condition: missing or empty",
        "trigger_type: bad value 'nope'",
        "attempted: empty list",
        "completed: missing or not a list",
        "remaining: missing or not a list",
        "evidence: missing, not a list, or empty",
        "severity critical: waiting_behavior must be paused or stopped",
    ]


@pytest.mark.parametrize("packet", [[], "text", 3, None, [{"packet_id": "x"}]])
def test_a_packet_that_is_not_an_object_is_refused(packet: object) -> None:
    assert report_of(packet) == [
        "packet_id: -",
        "run_id: -",
        "severity: -",
        "trigger_type: -",
        "waiting_behavior: -",
        "attempted: 0",
        "completed: 0",
        "remaining: 0",
        "evidence_entries: 0",
        "errors: 1",
        "  error: packet is not a JSON object",
        "warnings: 0",
        "verdict: FAIL",
    ]


def test_empty_remaining_is_a_warning_not_an_error() -> None:
    result = check_packet(with_changes(remaining=[]))
    assert result.passed
    assert result.warnings == ("remaining: empty list, no remaining work stated",)


@pytest.mark.parametrize(
    ("severity", "evidence", "warning"),
    [
        ("high", [{"kind": "log", "ref": "a"}], "severity high: only 1 evidence entry, 2 advised"),
        (
            "critical",
            [{"kind": "log", "ref": "a"}, {"kind": "bad", "ref": "b"}],
            "severity critical: only 1 evidence entry, 2 advised",
        ),
        ("high", [{"kind": "log", "ref": ""}], "severity high: only 0 evidence entry, 2 advised"),
    ],
)
def test_high_stakes_with_thin_evidence_warns(
    severity: str, evidence: list[Any], warning: str
) -> None:
    packet = with_changes(severity=severity, waiting_behavior="paused", evidence=evidence)
    assert warning in check_packet(packet).warnings


def test_low_severity_with_one_evidence_entry_does_not_warn() -> None:
    result = check_packet(with_changes(severity="low", evidence=[{"kind": "test", "ref": "t"}]))
    assert result.warnings == ()
    assert result.evidence_entries == 1


def test_counts_only_valid_entries() -> None:
    result = check_packet(
        with_changes(attempted=["a", "", "b"], completed=["x", 1], remaining=["r", " "])
    )
    assert (result.attempted, result.completed, result.remaining) == (2, 1, 1)


def test_secret_findings_come_last_and_name_field_and_kind_only() -> None:
    # Given a finder that reports a secret in trigger_detail
    class Finding:
        field = "trigger_detail"
        kind = "AWS access key"

    result = check_packet(with_changes(packet_id=""), find_secrets=lambda _packet: [Finding()])
    assert result.error_lines() == [
        "packet_id: missing or empty",
        "trigger_detail: contains a secret (AWS access key)",
    ]
