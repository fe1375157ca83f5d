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
