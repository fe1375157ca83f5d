"""The typed packet agrees with the checks, and the API documents the request with it."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from api.app import create_app
from models.packet import EscalationRequest, Packet
from models.settings import Settings
from workflows.examples import incomplete_packet, valid_packet
from workflows.packet_checks import check_packet


def test_a_packet_that_passes_the_checks_is_a_valid_model() -> None:
    packet = Packet.model_validate(valid_packet())
    assert packet.severity == "medium" and packet.evidence[1].kind == "artifact"


@pytest.mark.parametrize(
    "change",
    [{"evidence": []}, {"attempted": []}, {"severity": "urgent"}, {"run_id": ""}],
)
def test_what_the_checks_refuse_the_model_refuses(change: dict[str, object]) -> None:
    packet = {**valid_packet(), **change}
    assert not check_packet(packet).passed
    with pytest.raises(ValidationError):
        Packet.model_validate(packet)


def test_the_incomplete_example_is_not_a_model() -> None:
    with pytest.raises(ValidationError):
        EscalationRequest.model_validate({"packet": incomplete_packet()})


def test_the_openapi_spec_documents_the_request_body(tmp_path: Path) -> None:
    spec = create_app(Settings(home=tmp_path), migrate=False).openapi()
    body = spec["paths"]["/v1/escalations"]["post"]["requestBody"]
    ref = body["content"]["application/json"]["schema"]["$ref"]
    schemas = spec["components"]["schemas"]
    assert ref == "#/components/schemas/EscalationRequest"
    assert schemas["EscalationRequest"]["properties"]["packet"]["$ref"].endswith("/Packet")
    assert "resume_condition" in schemas["Packet"]["required"]
