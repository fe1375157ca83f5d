"""The typed inputs of `escalate mcp`'s tools: the packet's fields (SPEC §1) and its options.

Every field may be left out here, so a short packet reaches the service's check and comes back
with every §1 problem line, instead of failing the schema on the first missing key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from workflows.packet_schema import DESCRIPTIONS, ENUMS, field_shapes
from workflows.vocabulary import EvidenceKind

if TYPE_CHECKING:
    from pydantic_core.core_schema import CoreSchema


class EvidenceInput(BaseModel):
    kind: EvidenceKind = Field(description="link, artifact, test or log")
    ref: str = Field(description="where it is: a path, URL or log name")


class OptionInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str = Field(description="verb-led, as the person sees it: 'Skip the 3 records'")
    value: str | None = Field(default=None, description="what the run receives (default: label)")
    description: str | None = None
    resumes: bool | None = Field(default=None, description="does choosing it let the run go on")


class PacketFields(BaseModel):
    """An escalation packet (SPEC §1): what the run was doing, what stopped it, what it asks."""

    model_config = ConfigDict(extra="allow")

    def to_packet(self) -> dict[str, Any]:
        """The packet as the service takes it: fields left out stay out."""
        return self.model_dump(mode="json", exclude_none=True)


def _shown(name: str, shape: CoreSchema) -> Any:
    """What a client is shown for a packet field: its vocabulary or list, any text (blank
    text is the §1 check's to refuse, with its own line)."""
    if name in ENUMS:
        return ENUMS[name]
    if shape["type"] == "list":
        return list[EvidenceInput] if shape["items_schema"]["type"] == "typed-dict" else list[str]
    return str


# The packet's fields and their descriptions are workflows/packet_schema.py's, all optional.
if TYPE_CHECKING:
    PacketInput = PacketFields
else:
    PacketInput = create_model(
        "PacketInput",
        __base__=PacketFields,
        __doc__=PacketFields.__doc__,
        **{
            name: (
                _shown(name, shape) | None,
                Field(default=None, description=DESCRIPTIONS.get(name)),
            )
            for name, shape in field_shapes().items()
        },
    )


def options_body(options: list[str | OptionInput] | None) -> list[Any] | None:
    """Options as the service takes them: a label alone, or label/value/description."""
    if options is None:
        return None
    return [
        option if isinstance(option, str) else option.model_dump(exclude_none=True)
        for option in options
    ]
