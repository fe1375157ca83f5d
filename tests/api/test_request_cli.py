"""`escalate request compose|parse`: files written only when needed, valid, then resolved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from fastapi.testclient import TestClient
from typer.testing import CliRunner

import api.request_cli
from api.client import Escalations
from api.request_cli import register
from tests.workflows.test_requests import schema_errors

REPO = Path(__file__).resolve().parents[2]
DESIGN = REPO / "examples" / "design.yaml"
HARM = [
    "--situation",
    "The next step drops the orders_archive table, which has no backup. Run 8841 waits.",
    "--policy",
    "Dropping data without a backup needs a human.",
    "--trigger",
    "harm_risk",
    "--option",
    "Drop the table=drop",
    "--option",
    "Keep it=keep",
    "--context-ref",
    "logs/run-8841.txt",
]


@pytest.fixture
def app() -> typer.Typer:
    # Mounted the way api/cli.py will mount it, beside a sibling so "request" stays a group.
    root = typer.Typer()
    register(root)

    @root.command()
    def version() -> None:
        """A stand-in sibling command."""

    return root


def _compose(app: typer.Typer, folder: Path, *args: str, offline: bool = True) -> Any:
    flags = ["--dir", str(folder), "--design", str(DESIGN)]
    return CliRunner().invoke(
        app,
        ["request", "compose", *args, *flags, *(["--no-file-escalation"] if offline else [])],
    )


def _parse(app: typer.Typer, folder: Path, request_id: str, reply: str) -> Any:
    args = ["request", "parse", "--request-id", request_id, "--reply", reply]
    return CliRunner().invoke(app, [*args, "--dir", str(folder), "--design", str(DESIGN)])


def _written(folder: Path) -> dict[str, Any]:
    (path,) = folder.glob("*.json")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_given_a_routine_situation_when_composed_then_nothing_written_and_why(
    app: typer.Typer, tmp_path: Path
) -> None:
    # When
    result = _compose(
        app,
        tmp_path / "requests",
        *("--situation", "Spend is $20 so far.", "--policy", "Spend over $50 needs a human."),
        *("--trigger", "cost_risk", "--counter", "spend_usd=20"),
    )
    # Then
    assert result.exit_code == 1, result.output
    assert json.loads(result.stdout) == {
        "needs_human": False,
        "reason": "spend_usd is 20, cost_risk escalates at 50",
        "rule": "triggers.cost_risk",
        # a clause of no known shape is reported, never guessed at (workflows/request_policy.py)
        "policy": {
            "decided": False,
            "clause": None,
            "reason": "no policy clause applies",
            "not_applied": ["Spend over $50 needs a human"],
        },
    }
    assert not (tmp_path / "requests").exists()


def test_given_a_harm_risk_when_composed_then_a_schema_valid_open_request_file(
    app: typer.Typer, tmp_path: Path
) -> None:
    # When
    result = _compose(app, tmp_path / "requests", *HARM)
    # Then
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    data = _written(tmp_path / "requests")
    assert answer["needs_human"] is True
    assert answer["path"] == str(tmp_path / "requests" / f"{data['request_id']}.json")
    assert answer["escalation_id"] is None
    assert schema_errors(data) == []
    assert data["status"] == "open"
    assert data["options"] == [
        {"label": "Drop the table", "value": "drop"},
        {"label": "Keep it", "value": "keep"},
    ]
    assert data["timeout_default"] == {"after_minutes": 60, "action": "abort"}
    assert data["context_refs"] == ["logs/run-8841.txt"]


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        (["--option", "Dropping=drop"], "options[2].label: 'Dropping' must lead with an imper"),
        (["--prompt", "x" * 121], "prompt: 121 characters, at most 120"),
        (["--timeout-action", "skip"], "timeout_default.action: harm_risk steps are irreversible"),
        (["--timeout-minutes", "-5"], "timeout_default.after_minutes: must be more than 0"),
        (["--counter", "spend"], "counters: 'spend' is not NAME=NUMBER"),
    ],
)
def test_given_a_broken_limit_when_composed_then_exit_2_naming_it_and_nothing_written(
    app: typer.Typer, tmp_path: Path, extra: list[str], error: str
) -> None:
    # When
    result = _compose(app, tmp_path / "requests", *HARM, *extra)
    # Then
    assert result.exit_code == 2, result.output
    assert f"error: {error}" in result.stderr
    assert not (tmp_path / "requests").exists()


def test_given_a_broken_design_when_composed_then_exit_2(app: typer.Typer, tmp_path: Path) -> None:
    # When
    result = CliRunner().invoke(
        app,
        ["request", "compose", *HARM, "--design", str(REPO / "examples" / "bad-design.yaml")],
    )
    # Then
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {REPO / 'examples' / 'bad-design.yaml'}: ")


def test_given_an_open_request_when_a_reply_decides_then_resolved_and_the_decision(
    app: typer.Typer, tmp_path: Path
) -> None:
    # Given
    folder = tmp_path / "requests"
    _compose(app, folder, *HARM)
    request_id = _written(folder)["request_id"]
    # When
    result = _parse(app, folder, request_id, "keep it please")
    # Then
    assert result.exit_code == 0, result.output
    decision = json.loads(result.stdout)
    assert {k: decision[k] for k in ("request_id", "option", "value", "matched_by")} == {
        "request_id": request_id,
        "option": "Keep it",
        "value": "keep",
        "matched_by": "prefix",
    }
    assert decision["raw_reply"] == "keep it please"
    data = _written(folder)
    assert schema_errors(data) == []
    assert data["status"] == "resolved"
    assert data["escalate"]["decision"]["option"] == "Keep it"


def test_given_an_open_request_when_the_reply_is_a_question_then_still_open_exit_1(
    app: typer.Typer, tmp_path: Path
) -> None:
    # Given
    folder = tmp_path / "requests"
    _compose(app, folder, *HARM)
    request_id = _written(folder)["request_id"]
    # When
    result = _parse(app, folder, request_id, "is there really no backup?")
    # Then
    assert result.exit_code == 1, result.output
    assert json.loads(result.stdout)["decided"] is False
    assert f"request {request_id} stays open: That reads as a question" in result.stderr
    data = _written(folder)
    assert (data["status"], data["escalate"]["decision"]) == ("open", None)
    assert data["escalate"]["replies"][0]["outcome"] == "recorded"
    assert schema_errors(data) == []


def test_given_a_resolved_request_when_another_reply_comes_then_superseded_exit_1(
    app: typer.Typer, tmp_path: Path
) -> None:
    # Given
    folder = tmp_path / "requests"
    _compose(app, folder, *HARM)
    request_id = _written(folder)["request_id"]
    _parse(app, folder, request_id, "Keep it")
    # When
    result = _parse(app, folder, request_id, "Drop the table")
    # Then
    assert result.exit_code == 1
    data = _written(folder)
    assert data["escalate"]["decision"]["option"] == "Keep it"
    assert [r["outcome"] for r in data["escalate"]["replies"]] == ["decided", "superseded"]


@pytest.mark.parametrize(
    ("request_id", "content", "error"),
    [
        ("../../x", None, "error: --request-id: '../../x' is not 12 lowercase hex characters"),
        ("0a1b2c3d4e5f", None, "error: no request 0a1b2c3d4e5f in "),
        ("0a1b2c3d4e5f", "{not json", "/0a1b2c3d4e5f.json: not a JSON request file: "),
        ("0a1b2c3d4e5f", '{"id": "0a1b2c3d4e5f"}', "/0a1b2c3d4e5f.json: created_at: missing"),
    ],
)
def test_given_a_bad_request_id_or_file_when_parsed_then_exit_2(
    app: typer.Typer, tmp_path: Path, request_id: str, content: str | None, error: str
) -> None:
    # Given
    folder = tmp_path / "requests"
    folder.mkdir()
    if content is not None:
        (folder / "0a1b2c3d4e5f.json").write_text(content)
    # When
    result = _parse(app, folder, request_id, "Keep it")
    # Then
    assert result.exit_code == 2
    assert error in result.stderr


def test_given_no_service_when_filed_then_the_file_stays_with_a_null_escalation_exit_3(
    app: typer.Typer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given nothing listens on the discard port
    monkeypatch.setenv("ESCALATE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("ESCALATE_TOKEN", "agent-t")
    # When
    result = _compose(app, tmp_path / "requests", *HARM, offline=False)
    # Then
    assert result.exit_code == 3, result.output
    assert "written but not filed: cannot reach http://127.0.0.1:9" in result.stderr
    assert _written(tmp_path / "requests")["escalate"]["escalation_id"] is None


def test_given_the_service_when_filed_then_the_escalation_id_is_in_the_file(
    app: typer.Typer, tmp_path: Path, api_client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the app under test behind the real client (same design as the app's settings)
    class Borrowed(Escalations):
        def close(self) -> None:  # the fixture owns the TestClient
            pass

    def client() -> Escalations:
        escalations = Borrowed("http://testserver", "agent-t")
        api_client.headers["Authorization"] = "Bearer agent-t"
        escalations._http = api_client
        return escalations

    monkeypatch.setattr(api.request_cli, "escalations_client", client)
    folder = tmp_path / "requests"
    fast = REPO / "examples" / "design-fast.yaml"
    # When
    result = CliRunner().invoke(
        app, ["request", "compose", *HARM, "--dir", str(folder), "--design", str(fast)]
    )
    # Then
    assert result.exit_code == 0, result.output
    data = _written(folder)
    assert data["escalate"]["escalation_id"] == json.loads(result.stdout)["escalation_id"]
    case = api_client.get(f"/v1/escalations/{data['escalate']['escalation_id']}").json()
    assert case["packet_id"] == f"req-{data['request_id']}"
    assert [o["label"] for o in case["options"]] == ["Drop the table", "Keep it"]
    assert schema_errors(data) == []
