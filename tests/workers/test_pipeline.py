"""Pipelines (SPEC §6) against a running service: state folder in, command out, caps held."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from models.store import as_utc
from tests.workers.conftest import Harness
from workers.answers import answer
from workers.runtime import runtime_for
from workflows.pipeline import NUCLEAR_WARNING

AGENT = {"Authorization": "Bearer agent-token"}
RESETS = ["RESET_EXECUTION", "RESET_PHASE", "RESET_REVIEWER"]
FULL_OFFER = [*RESETS, "PROCEED", "STOP"]


def state_folder(root: Path, name: str = "run", **files: Any) -> Path:
    """A pipeline's state folder: phase_state.json and whichever optional files are given."""
    folder = root / name
    folder.mkdir(exist_ok=True)
    for stem, content in files.items():
        text = content if isinstance(content, str) else json.dumps(content)
        (folder / f"{stem}.json").write_text(text, encoding="utf-8")
    return folder


def phase_state(resets: int = 0, nuclear: int = 0, reason: str = "executor retries exhausted"):
    return {
        "phase": 4,
        "executor_retries": 3,
        "escalation_resets": resets,
        "nuclear_resets": nuclear,
        "escalation_trigger_reason": reason,
    }


def raise_from(api: TestClient, folder: Path, **body: Any) -> dict[str, Any]:
    response = api.post(
        "/v1/pipelines/escalations",
        headers=AGENT,
        json={"state_dir": str(folder), "pipeline_id": "payments", **body},
    )
    assert response.status_code in (200, 201), response.text
    result: dict[str, Any] = response.json()
    return result


def decide(service: Harness, escalation_id: str, text: str, who: str = "op") -> Any:
    service.in_state(escalation_id, "awaiting", "followed_up")
    return answer(runtime_for(service.app), escalation_id, text=text, responder=who, channel="test")


def counters(api: TestClient, phase: str = "4") -> dict[str, Any]:
    response = api.get(
        "/v1/pipelines/counters", headers=AGENT, params={"pipeline_id": "payments", "phase": phase}
    )
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def test_a_pipeline_escalates_from_its_state_folder_and_its_command_is_recorded(
    service: Harness, api: TestClient, tmp_path: Path
) -> None:
    folder = state_folder(
        tmp_path,
        phase_state=phase_state(),
        current_phase={"phase": 4, "description": "Add auth middleware"},
        failure_context={"component": "executor", "error": "pytest: 3 failed"},
        reviewer_output="{oops",
    )
    command_file = tmp_path / "command.json"
    case = raise_from(api, folder, command_file=str(command_file))
    assert case["created"] and case["offered"] == FULL_OFFER
    assert case["files"]["phase_state.json"] == {"status": "read"}
    assert case["files"]["planner_output.json"] == {"status": "absent"}
    assert case["files"]["reviewer_output.json"]["status"] == "malformed"
    # The advisory is on disk before the case exists, so before any notification
    summary = json.loads((folder / "escalation_summary.json").read_text())
    assert summary["recommended_action"].startswith("RESET_EXECUTION:")
    assert all(len(summary[k]) <= 200 for k in ("summary", "recommended_action"))
    [accepted] = service.events(case["id"], "accepted")
    written = (folder / "escalation_summary.json").stat().st_mtime_ns
    accepted_at = as_utc(accepted.at)
    assert accepted_at is not None and written <= accepted_at.timestamp() * 1e9
    service.sink.wait_for(lambda got: any("phase-4" in r.body["message"] for r in got))
    message = next(r.body["message"] for r in service.sink.posts("/oncall"))
    options = [line.split(" — ")[0] for line in message.splitlines() if line.startswith("- ")]
    assert options[-5:] == [
        f"- {label}"
        for label in ("RESET_EXECUTION", "RESET_PHASE", "RESET_REVIEWER", "PROCEED", "STOP")
    ]
    assert f"Summary: {summary['summary']}" in message
    assert "Unreadable state files: reviewer_output.json: malformed" in message
    assert "the default applies: STOP" in message
    assert "SKIP" not in message and "NUCLEAR" not in message

    taken = api.post(
        f"/v1/escalations/{case['id']}/acknowledge",
        headers={"Authorization": "Bearer op-token"},
        json={"reason": "reading the executor's log"},
    )
    assert taken.status_code == 200, taken.text
    result = decide(service, case["id"], "reset execution please")
    assert result.outcome == "decided" and result.option == "RESET_EXECUTION"
    service.in_state(case["id"], "closed")
    service.wait(lambda _s: command_file.exists(), what="the command file")
    written = json.loads(command_file.read_text())
    assert (written["command"], written["decided_by"], written["phase"]) == (
        "RESET_EXECUTION",
        "op",
        "4",
    )
    assert written["outcome"] == "decided" and written["recheck"].startswith("unchanged: file")
    # The orchestrator reads who handled it and why beside the command
    [reason] = written["reasons"]
    assert (reason["what"], reason["who"], reason["why"]) == (
        "acknowledged",
        "api:operator",
        "reading the executor's log",
    )
    detail = api.get(f"/v1/escalations/{case['id']}", headers=AGENT).json()
    assert detail["pipeline"]["command"] == "RESET_EXECUTION"
    assert counters(api)["resets"] == 1


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_the_service_count_holds_the_cap_when_the_file_is_stale(
    service: Harness, api: TestClient, tmp_path: Path
) -> None:
    # The orchestrator never updates its file: it says 0 resets every time
    folder = state_folder(tmp_path, phase_state=phase_state(resets=0))
    for index, command in enumerate(["reset phase", "RESET_REVIEWER", "restart phase"]):
        case = raise_from(api, folder)
        assert case["offered"] == FULL_OFFER, index
        assert decide(service, case["id"], command).outcome == "decided"
        service.in_state(case["id"], "closed")
    assert counters(api)["resets"] == 3
    case = raise_from(api, folder)
    assert case["offered"] == ["PROCEED", "STOP", "NUCLEAR_RESET"]
    assert case["cap_reached"] is True
    packet_id = f"payments:phase-4:escalation-{4}"
    service.sink.wait_for(lambda got: any(packet_id in r.body["message"] for r in got))
    message = next(
        r.body["message"] for r in service.sink.posts() if packet_id in r.body["message"]
    )
    assert "Question: Reset cap reached for phase 4; choose how the pipeline goes on" in message
    assert "only PROCEED and STOP execute" in message
    assert f"NUCLEAR_RESET — (Nuclear Reset) Wipe and re-plan. {NUCLEAR_WARNING}" in message
    assert "RESET_EXECUTION" not in message.split("How to answer:")[0].split("Options:")[1]
    refused = decide(service, case["id"], "RESET_EXECUTION")
    assert refused.outcome == "over_cap"
    assert "cannot be used now" in refused.message
    skipped = decide(service, case["id"], "SKIP")
    assert skipped.outcome == "over_cap"  # past the cap only PROCEED and STOP execute
    unconfirmed = decide(service, case["id"], "NUCLEAR_RESET")
    assert unconfirmed.outcome == "needs_confirmation"
    assert decide(service, case["id"], "CONFIRM NUCLEAR_RESET").outcome == "decided"
    service.in_state(case["id"], "closed")
    assert counters(api)["nuclear"] == 1


def test_a_reset_used_up_by_another_case_is_refused_at_decision_time(
    service: Harness, api: TestClient, tmp_path: Path
) -> None:
    first = raise_from(api, state_folder(tmp_path, "a", phase_state=phase_state(resets=2)))
    second = raise_from(
        api, state_folder(tmp_path, "b", phase_state=phase_state(2, reason="reviewer crashed"))
    )
    assert first["id"] != second["id"]
    assert first["offered"] == second["offered"] == FULL_OFFER
    assert decide(service, first["id"], "RESET_EXECUTION").outcome == "decided"
    unclear = decide(service, second["id"], "what now?")  # told only what still runs
    assert unclear.message.endswith("Reply with exactly one of: PROCEED, STOP.")
    late = decide(service, second["id"], "RESET_REVIEWER")
    assert late.outcome == "over_cap"
    assert "phase 4 has used 3 resets" in late.message
    assert late.message.endswith("Reply with one of: PROCEED, STOP.")  # only what runs now
    skipped = decide(service, second["id"], "SKIP")  # typed, and past the cap since
    assert skipped.outcome == "over_cap"
    assert decide(service, second["id"], "proceed").outcome == "decided"
    assert counters(api)["resets"] == 3


def test_simultaneous_resets_in_one_phase_never_pass_the_cap(
    service: Harness, api: TestClient, tmp_path: Path
) -> None:
    cases = [
        raise_from(api, state_folder(tmp_path, f"c{i}", phase_state=phase_state(2, reason=f"r{i}")))
        for i in range(3)
    ]
    for case in cases:
        service.in_state(case["id"], "awaiting", "followed_up")
    barrier = threading.Barrier(len(cases))
    outcomes: list[str] = []

    def operator(escalation_id: str) -> None:
        barrier.wait()
        outcomes.append(decide(service, escalation_id, "RESET_PHASE", who="op").outcome)

    threads = [threading.Thread(target=operator, args=(c["id"],)) for c in cases]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(outcomes) == ["decided", "over_cap", "over_cap"]
    assert counters(api)["resets"] == 3


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_skip_counts_only_when_typed_and_a_repeat_joins_the_open_case(
    service: Harness, api: TestClient, tmp_path: Path
) -> None:
    folder = state_folder(tmp_path, phase_state=phase_state(resets=1))
    case = raise_from(api, folder)
    again = raise_from(api, folder)
    assert again["joined"] and again["id"] == case["id"] and again["offered"] == FULL_OFFER
    service.in_state(case["id"], "awaiting", "followed_up")
    # The orchestrator's state moves while the human thinks: the command says reconcile first
    (folder / "phase_state.json").write_text(json.dumps(phase_state(resets=1) | {"phase": 5}))
    assert decide(service, case["id"], "skip").outcome == "decided"
    service.in_state(case["id"], "closed")
    detail = api.get(f"/v1/escalations/{case['id']}", headers=AGENT).json()
    assert detail["pipeline"]["command"] == "SKIP"
    assert detail["outcome"] == "reconcile_first"
    assert counters(api)["resets"] == 1  # SKIP is no reset


@pytest.mark.impatient
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_nobody_answering_halts_the_pipeline(
    service: Harness, api: TestClient, tmp_path: Path
) -> None:
    command_file = tmp_path / "command.json"
    folder = state_folder(tmp_path, phase_state=phase_state())
    case = raise_from(api, folder, command_file=str(command_file))
    service.in_state(case["id"], "closed", timeout=30)
    service.wait(lambda _s: command_file.exists(), what="the command file")
    written = json.loads(command_file.read_text())
    assert written["command"] == "STOP" and written["is_default"] is True
    assert written["outcome"] == "defaulted"


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
@pytest.mark.parametrize(
    ("files", "body", "code", "error"),
    [
        # what the request points at is not there: 404 (the OpenAPI schema allows the body)
        ({}, {}, 404, "phase_state.json: required, but not in the state folder"),
        ({"phase_state": "{"}, {}, 422, "phase_state.json: not JSON"),
        ({"phase_state": {"phase": 1}}, {"severity": "urgent"}, 422, "severity"),
        ({"phase_state": {"phase": 1}}, {"command_file": "out.json"}, 422, "wake.command_file"),
    ],
)
def test_a_folder_that_cannot_carry_an_escalation_is_refused_by_name(
    service: Harness,
    api: TestClient,
    tmp_path: Path,
    files: dict[str, Any],
    body: dict[str, Any],
    code: int,
    error: str,
) -> None:
    folder = state_folder(tmp_path, **files)
    response = api.post(
        "/v1/pipelines/escalations", headers=AGENT, json={"state_dir": str(folder), **body}
    )
    assert response.status_code == code
    assert error in str(response.json())  # errors (our checks) or detail (the schema's)
    assert not (folder / "escalation_summary.json").exists()


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_relative_or_missing_state_folder_is_refused(service: Harness, api: TestClient) -> None:
    for folder, code, error in [
        ("runs/p1", 422, "must be an absolute path"),
        ("/nowhere/p1", 404, "not a folder"),
    ]:
        response = api.post("/v1/pipelines/escalations", headers=AGENT, json={"state_dir": folder})
        assert response.status_code == code and error in response.text
