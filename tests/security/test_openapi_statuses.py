"""The OpenAPI schema is the API (issue #14, item 12, in part): every operation declares the
statuses the one status table (api/statuses.py) can give it, with the error body's shape, and
a filter the schema allows is never a 500."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from models.settings import Settings

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(
        home=tmp_path / "home",
        design=REPO / "examples" / "design-fast.yaml",
        api_tokens="agent:agent-t,operator:op-t",
    )
    with TestClient(create_app(settings)) as started:
        yield started


def operations(spec: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            yield f"{method.upper()} {path}", operation


def test_every_operation_declares_every_status_it_can_answer(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    missing = {}
    for name, operation in operations(spec):
        wanted = {"400", "404", "409", "413", "422", "429", "503"}
        if operation.get("security"):
            wanted |= {"401", "403"}
        if lacking := wanted - set(operation["responses"]):
            missing[name] = sorted(lacking)
    assert missing == {}


def test_refusals_are_documented_with_the_body_they_carry(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    for name, operation in operations(spec):
        body = operation["responses"]["422"]["content"]["application/json"]["schema"]
        error = {"$ref": "#/components/schemas/ErrorBody"}
        # a reply's 422 is its outcome (unknown option, over the cap) or one of our refusals
        assert body == error or error in body["anyOf"], name
    # and a real refusal has that shape: {"detail": ...}
    refused = client.get("/v1/escalations", headers={"Authorization": "Bearer nope"})
    assert refused.status_code == 401 and "detail" in refused.json()


def test_an_empty_state_filter_is_a_422_not_a_500(client: TestClient) -> None:
    response = client.get(
        "/v1/escalations", params={"state": ""}, headers={"Authorization": "Bearer op-t"}
    )
    assert response.status_code == 422, response.text


def test_a_platform_not_configured_is_a_declared_503(client: TestClient) -> None:
    # Given a service with no Slack signing secret and no Telegram webhook secret
    spec = client.get("/openapi.json").json()
    for platform in ("slack", "telegram"):
        # When the platform posts to its webhook
        answer = client.post(f"/v1/inbound/{platform}", json={})
        # Then it is told to try later, in the error body the schema declares for 503
        assert answer.status_code == 503 and "not configured" in answer.json()["detail"]
        assert answer.headers["retry-after"]
        declared = spec["paths"][f"/v1/inbound/{platform}"]["post"]["responses"]["503"]
        assert declared["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/ErrorBody"
        }
