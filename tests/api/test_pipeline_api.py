"""`POST /v1/pipelines/escalations` (SPEC §6): every counter combination a state folder can hold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

AGENT = {"Authorization": "Bearer agent-t"}
OPERATOR = {"Authorization": "Bearer op-t"}
RESETS = ["RESET_EXECUTION", "RESET_PHASE", "RESET_REVIEWER"]
WARNING = "Last resort — the same failure can recur if the underlying problem isn't addressed."


def allowed(resets: int, nuclear: int) -> list[str]:
    """SPEC §6, written out again here rather than imported."""
    if resets < 3:
        return [*RESETS, "PROCEED", "STOP"]
    return ["PROCEED", "STOP", *(["NUCLEAR_RESET"] if nuclear < 2 else [])]


def folder_with(tmp_path: Path, resets: int, nuclear: int) -> Path:
    folder = tmp_path / f"state-{resets}-{nuclear}"
    folder.mkdir()
    (folder / "phase_state.json").write_text(
        json.dumps(
            {
                "phase": 7,
                "executor_retries": 3,
                "escalation_resets": resets,
                "nuclear_resets": nuclear,
                "escalation_trigger_reason": "executor retries exhausted",
            }
        )
    )
    return folder


@pytest.mark.parametrize("resets", [0, 1, 2, 3])
@pytest.mark.parametrize("nuclear", [0, 1, 2])
def test_the_folder_counters_decide_the_offered_commands(
    api_client: TestClient, tmp_path: Path, resets: int, nuclear: int
) -> None:
    folder = folder_with(tmp_path, resets, nuclear)
    response = api_client.post(
        "/v1/pipelines/escalations",
        headers=AGENT,
        json={"state_dir": str(folder), "pipeline_id": f"combo-{resets}-{nuclear}"},
    )
    assert response.status_code == 201, response.text
    case = response.json()
    assert case["offered"] == allowed(resets, nuclear)
    assert case["counters"] == {"resets": resets, "nuclear": nuclear}
    assert case["cap_reached"] == (resets >= 3)
    detail = api_client.get(f"/v1/escalations/{case['id']}", headers=OPERATOR).json()
    assert [o["label"] for o in detail["options"]] == allowed(resets, nuclear)
    nuclear_option = [o for o in detail["options"] if o["label"] == "NUCLEAR_RESET"]
    assert all(WARNING in o["description"] and o["destructive"] for o in nuclear_option)
    if resets >= 3:
        assert "Reset cap reached" in detail["packet"]["requested_action"]
    else:
        assert "Reset cap reached" not in detail["packet"]["requested_action"]
    advisory = json.loads((folder / "escalation_summary.json").read_text())
    assert advisory["offered"] == allowed(resets, nuclear)
    assert advisory["recommended_action"].split(":")[0] in allowed(resets, nuclear)
    assert detail["pipeline"]["command"] is None  # nothing chosen yet


def test_counters_are_per_pipeline_and_phase(api_client: TestClient, tmp_path: Path) -> None:
    folder = folder_with(tmp_path, 3, 1)
    body: dict[str, Any] = {"state_dir": str(folder), "pipeline_id": "alpha"}
    assert api_client.post("/v1/pipelines/escalations", headers=AGENT, json=body).status_code == 201

    def counted(pipeline: str, phase: str) -> dict[str, Any]:
        params = {"pipeline_id": pipeline, "phase": phase}
        result: dict[str, Any] = api_client.get(
            "/v1/pipelines/counters", headers=OPERATOR, params=params
        ).json()
        return result

    assert counted("alpha", "7")["resets"] == 3 and counted("alpha", "7")["nuclear"] == 1
    assert counted("alpha", "7")["offered"] == ["PROCEED", "STOP", "NUCLEAR_RESET"]
    for other in (counted("alpha", "8"), counted("beta", "7")):
        assert (other["resets"], other["nuclear"], other["escalations"]) == (0, 0, 0)
        assert other["offered"] == allowed(0, 0)


def test_an_unknown_field_or_a_missing_token_is_refused(
    api_client: TestClient, tmp_path: Path
) -> None:
    folder = folder_with(tmp_path, 0, 0)
    unknown = api_client.post(
        "/v1/pipelines/escalations", headers=AGENT, json={"state_dir": str(folder), "phaze": 1}
    )
    assert unknown.status_code == 422 and "phaze" in unknown.text
    anonymous = api_client.post("/v1/pipelines/escalations", json={"state_dir": str(folder)})
    assert anonymous.status_code == 401
    assert not (folder / "escalation_summary.json").exists()
