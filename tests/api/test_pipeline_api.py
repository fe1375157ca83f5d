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


def post(api_client: TestClient, **body: Any) -> Any:
    return api_client.post("/v1/pipelines/escalations", headers=AGENT, json=body)


def test_one_folder_has_one_set_of_counters_however_its_path_is_spelled(
    api_client: TestClient, tmp_path: Path
) -> None:
    folder = folder_with(tmp_path, 3, 0)
    (tmp_path / "alias").symlink_to(folder)
    spellings = [folder, tmp_path / "x" / ".." / folder.name, tmp_path / "alias"]
    (tmp_path / "x").mkdir()
    made = [post(api_client, state_dir=str(path)).json() for path in spellings]
    assert {case["pipeline_id"] for case in made} == {str(folder.resolve())}
    assert len({case["id"] for case in made}) == 1  # the same open question: joined


def test_ids_longer_than_the_counters_hold_are_refused_by_name(
    api_client: TestClient, tmp_path: Path
) -> None:
    folder = folder_with(tmp_path, 0, 0)
    response = post(api_client, state_dir=str(folder), pipeline_id="p" * 201)
    assert response.status_code == 422
    assert response.json()["errors"] == ["pipeline_id: at most 200 characters, not 201"]


def test_a_summary_that_cannot_be_written_refuses_by_name(
    api_client: TestClient, tmp_path: Path
) -> None:
    folder = folder_with(tmp_path, 0, 0)
    (folder / "escalation_summary.json").mkdir()  # something in the file's place
    response = post(api_client, state_dir=str(folder), pipeline_id="blocked")
    assert response.status_code == 422
    assert response.json()["errors"][0].startswith("escalation_summary.json: cannot write")


def test_a_repeat_that_joins_keeps_the_summary_of_the_open_case(
    api_client: TestClient, tmp_path: Path
) -> None:
    folder = folder_with(tmp_path, 1, 0)
    first = post(api_client, state_dir=str(folder), pipeline_id="join").json()
    # The orchestrator's file now claims the cap is spent; the open case still offers resets
    folder_state = json.loads((folder / "phase_state.json").read_text())
    (folder / "phase_state.json").write_text(json.dumps({**folder_state, "escalation_resets": 3}))
    again = post(api_client, state_dir=str(folder), pipeline_id="join").json()
    assert again["joined"] and again["id"] == first["id"]
    summary = json.loads((folder / "escalation_summary.json").read_text())
    assert summary["offered"] == first["offered"] == allowed(1, 0)
