"""The API documents and types the request with the very schema the checks validate with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from api.app import create_app
from models.packet import EscalationRequest, Packet
from models.settings import Settings
from workflows.examples import incomplete_packet, valid_packet
from workflows.packet_checks import check_packet
from workflows.vocabulary import EvidenceKind, Severity, TriggerType, WaitingBehavior

PACKET = TypeAdapter(Packet)


def test_a_packet_that_passes_the_checks_is_a_valid_model() -> None:
    packet = PACKET.validate_python(valid_packet())
    assert packet["severity"] == "medium" and packet["evidence"][1]["kind"] == "artifact"


@pytest.mark.parametrize(
    "change",
    [
        {"evidence": []},
        {"attempted": []},
        {"severity": "urgent"},
        {"run_id": ""},
        {"run_id": "   "},  # blank: refused by both, not only the empty string
        {"completed": ["done", 3]},
        {"evidence": [{"kind": "log", "ref": "\u00a0"}]},
    ],
)
def test_what_the_checks_refuse_the_model_refuses(change: dict[str, object]) -> None:
    packet = {**valid_packet(), **change}
    assert not check_packet(packet).passed
    with pytest.raises(ValidationError):
        PACKET.validate_python(packet)


def test_the_model_leaves_recipient_and_waiting_behavior_to_the_design() -> None:
    packet = {**valid_packet(), "waiting_behavior": None}
    del packet["recipient"]
    assert PACKET.validate_python(packet)["waiting_behavior"] is None


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
    packet = schemas["Packet"]
    assert "resume_condition" in packet["required"]
    assert "recipient" not in packet["required"]
    # The vocabularies come from the schema the checks run, not from a copy kept by hand.
    properties = packet["properties"]

    def enum_of(shape: dict[str, Any]) -> list[str]:
        shape = shape["anyOf"][0] if "anyOf" in shape else shape
        return list(schemas[shape["$ref"].rsplit("/", 1)[1]]["enum"])

    for name, vocabulary in (
        ("severity", Severity),
        ("trigger_type", TriggerType),
        ("waiting_behavior", WaitingBehavior),
    ):
        assert enum_of(properties[name]) == [member.value for member in vocabulary]
    evidence = schemas[properties["evidence"]["items"]["$ref"].rsplit("/", 1)[1]]
    assert enum_of(evidence["properties"]["kind"]) == [kind.value for kind in EvidenceKind]
    assert properties["attempted"]["minItems"] == 1
