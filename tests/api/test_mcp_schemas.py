"""`escalate mcp`'s packet input: the packet's own fields (workflows/packet_schema.py), each
optional, so a short packet reaches the §1 check. No server: the model is the tool's schema."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from api.mcp_schemas import PacketInput
from workflows.packet_schema import DESCRIPTIONS, field_shapes
from workflows.vocabulary import Severity, TriggerType, WaitingBehavior


def test_given_the_packet_schema_when_the_mcp_input_is_built_then_the_same_fields() -> None:
    # When
    fields = PacketInput.model_fields
    # Then: one list of packet fields, in the SPEC's order, described as the API describes them
    assert list(fields) == list(field_shapes())
    assert not [name for name, field in fields.items() if field.is_required()]
    assert {name: field.description for name, field in fields.items()} == {
        name: DESCRIPTIONS.get(name) for name in field_shapes()
    }


def test_given_a_short_packet_when_taken_then_what_it_gave_goes_on_to_the_check() -> None:
    # Given blank text (the check's to refuse, with its own line) and a field of the run's own
    given = {"run_id": "run-1", "task_summary": " ", "severity": "high", "ticket": "T-1"}
    # When
    packet = PacketInput.model_validate(given)
    # Then
    assert packet.to_packet() == given


def test_given_a_word_outside_a_vocabulary_when_taken_then_the_schema_refuses_it() -> None:
    # When / Then
    with pytest.raises(ValidationError, match="waiting_behavior"):
        PacketInput.model_validate({"waiting_behavior": "nap"})


def test_given_the_tool_schema_when_shown_then_vocabularies_and_entries_are_typed() -> None:
    # When
    schema = PacketInput.model_json_schema()
    # Then
    defs = schema["$defs"]
    for vocabulary in (Severity, TriggerType, WaitingBehavior):
        assert defs[vocabulary.__name__]["enum"] == [member.value for member in vocabulary]
    assert schema["properties"]["evidence"]["anyOf"][0]["items"] == {
        "$ref": "#/$defs/EvidenceInput"
    }
    assert schema["properties"]["attempted"]["anyOf"][0] == {
        "items": {"type": "string"},
        "type": "array",
    }
    assert "required" not in schema
