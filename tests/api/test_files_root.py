"""ESCALATE_FILES_ROOT: an agent token cannot point the service at files outside the runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from models.settings import Settings
from workflows.examples import valid_packet

AGENT = {"Authorization": "Bearer agent-t"}


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    folder = tmp_path / "runs"
    folder.mkdir()
    return folder


@pytest.fixture
def client(api_settings: Settings, runs: Path) -> Iterator[TestClient]:
    settings = api_settings.model_copy(update={"files_root": f"/nonexistent-root:{runs}"})
    with TestClient(create_app(settings)) as started:
        yield started


def raise_with(client: TestClient, packet_id: str, **wake: str) -> tuple[int, str]:
    body = {"packet": {**valid_packet(), "packet_id": packet_id}, "wake": wake}
    response = client.post("/v1/escalations", headers=AGENT, json=body)
    return response.status_code, response.text


def test_run_files_must_lie_under_the_root(client: TestClient, runs: Path, tmp_path: Path) -> None:
    assert raise_with(client, "in", blocked_file=str(runs / "a" / "BLOCKED.md"))[0] == 201
    for key in ("blocked_file", "fallback_file", "command_file"):
        status, text = raise_with(client, f"out-{key}", **{key: str(tmp_path / "BLOCKED.md")})
        assert status == 422
        assert f"wake.{key}: {tmp_path / 'BLOCKED.md'} is outside ESCALATE_FILES_ROOT" in text
    # A link inside the root that leads out of it is judged by where it leads
    (runs / "escape").symlink_to(tmp_path)
    status, text = raise_with(client, "link", blocked_file=str(runs / "escape" / "BLOCKED.md"))
    assert status == 422 and "outside ESCALATE_FILES_ROOT" in text


def test_a_pipeline_folder_outside_the_root_is_neither_read_nor_written(
    client: TestClient, runs: Path, tmp_path: Path
) -> None:
    for folder in (runs / "p1", tmp_path / "elsewhere"):
        folder.mkdir()
        (folder / "phase_state.json").write_text(json.dumps({"phase": 1}))
    inside = client.post(
        "/v1/pipelines/escalations", headers=AGENT, json={"state_dir": str(runs / "p1")}
    )
    assert inside.status_code == 201, inside.text
    outside = client.post(
        "/v1/pipelines/escalations",
        headers=AGENT,
        json={"state_dir": str(tmp_path / "elsewhere"), "pipeline_id": "x"},
    )
    assert outside.status_code == 422
    assert "state_dir: " in outside.text and "outside ESCALATE_FILES_ROOT" in outside.text
    assert not (tmp_path / "elsewhere" / "escalation_summary.json").exists()
    stray = client.post(
        "/v1/pipelines/escalations",
        headers=AGENT,
        json={"state_dir": str(runs / "p1"), "command_file": str(tmp_path / "cmd.json")},
    )
    assert stray.status_code == 422 and "command_file: " in stray.text


def test_without_a_root_any_absolute_path_is_accepted(
    api_client: TestClient, tmp_path: Path
) -> None:
    assert raise_with(api_client, "free", blocked_file=str(tmp_path / "BLOCKED.md"))[0] == 201


def test_nothing_outside_the_root_is_read_through_a_link_or_probed(
    client: TestClient, runs: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "phase_state.json").write_text(json.dumps({"phase": 9, "pipeline_id": "leak"}))
    folder = runs / "linked"
    folder.mkdir()
    (folder / "phase_state.json").symlink_to(outside / "phase_state.json")
    linked = client.post(
        "/v1/pipelines/escalations", headers=AGENT, json={"state_dir": str(folder)}
    )
    assert linked.status_code == 422
    assert "phase_state.json: outside ESCALATE_FILES_ROOT" in linked.text
    # A fingerprint the recheck would read (or run git in) is bounded the same way
    body = {
        "packet": {**valid_packet(), "packet_id": "fp"},
        "snapshot": {"fingerprint": {"kind": "git", "path": "/"}},
    }
    probed = client.post("/v1/escalations", headers=AGENT, json=body)
    assert probed.status_code == 422
    assert "snapshot.fingerprint.path: / is outside ESCALATE_FILES_ROOT" in probed.text


def test_a_pipeline_whose_wake_file_is_refused_writes_no_summary(
    client: TestClient, runs: Path, tmp_path: Path
) -> None:
    folder = runs / "p2"
    folder.mkdir()
    (folder / "phase_state.json").write_text(json.dumps({"phase": 1}))
    body = {"state_dir": str(folder), "wake": {"fallback_file": str(tmp_path / "BLOCKED.md")}}
    response = client.post("/v1/pipelines/escalations", headers=AGENT, json=body)
    assert response.status_code == 422 and "wake.fallback_file" in response.text
    assert not (folder / "escalation_summary.json").exists()


def test_a_relative_fingerprint_path_is_refused_when_a_root_is_set(client: TestClient) -> None:
    body = {
        "packet": {**valid_packet(), "packet_id": "rel"},
        "snapshot": {"fingerprint": {"kind": "git", "path": "."}},
    }
    response = client.post("/v1/escalations", headers=AGENT, json=body)
    assert response.status_code == 422
    assert (
        "snapshot.fingerprint.path: must be absolute (ESCALATE_FILES_ROOT is set)" in response.text
    )
