"""Escalation chains: a tier's levels of recipients, paged one after another until it stops."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from workflows.design_errors import rule_error
from workflows.design_fields import Duration, Tag
from workflows.working_hours import WorkingHours, page_time


class StopOn(StrEnum):
    """What ends a chain: a decision always; `ack` also ends it at the first acknowledgement."""

    DECISION = "decision"
    ACK = "ack"


class ChainLevel(BaseModel):
    """One level: whom it pages, and how long after the chain's previous page."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    after: Duration
    # Emptiness is checked after the entries, so a bad entry is not also reported as "empty".
    recipients: tuple[Tag, ...]

    @model_validator(mode="before")
    @classmethod
    def _bare_tag(cls, data: object) -> object:
        if isinstance(data, dict) and isinstance(data.get("recipients"), str):
            return {**data, "recipients": (data["recipients"],)}
        return data

    @model_validator(mode="after")
    def _distinct(self) -> ChainLevel:
        if not self.recipients:
            raise rule_error("list at least one apprise tag", "recipients")
        if len(set(self.recipients)) != len(self.recipients):
            raise rule_error("a tag is listed twice", "recipients")
        return self


class Chain(BaseModel):
    """Levels paged in order after the first notice; the whole run repeated `repeat` times."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    levels: tuple[ChainLevel, ...]
    repeat: Annotated[int, Field(ge=0, le=10, strict=True)] = 0
    stop_on: StopOn = StopOn.DECISION

    @model_validator(mode="after")
    def _some_level(self) -> Chain:
        if not self.levels:
            raise rule_error("list at least one level ({after, recipients})", "levels")
        return self

    @property
    def span(self) -> timedelta:
        """From the first notice to the chain's last page (working hours aside)."""
        once = sum((level.after for level in self.levels), timedelta())
        return once * (self.repeat + 1)


@dataclass(frozen=True)
class ChainPage:
    """One level's page in one round: step numbers the outbox row (1 is the first page)."""

    step: int
    level: int  # 1-based
    round: int  # 1-based
    at: datetime
    recipients: tuple[str, ...]


def chain_pages(
    chain: Chain, *, start: datetime, hours: WorkingHours | None, severity: str
) -> list[ChainPage]:
    """Every page the chain will send if nothing stops it, each due no earlier than the
    tier's working hours allow; a level waits for the one before it."""
    pages = []
    due = start
    for round_ in range(chain.repeat + 1):
        for index, level in enumerate(chain.levels):
            due = page_time(hours, severity, due + level.after)
            step = round_ * len(chain.levels) + index + 1
            pages.append(ChainPage(step, index + 1, round_ + 1, due, level.recipients))
    return pages


def stops_on_ack(chain: Chain | None) -> bool:
    """Whether an acknowledgement cancels the chain's pages still waiting."""
    return chain is not None and chain.stop_on is StopOn.ACK


def chain_note(page: ChainPage, chain: Chain, *, packet_id: str) -> str:
    """The line a chain page opens with, saying where in the chain it is."""
    where = f"level {page.level} of {len(chain.levels)}"
    if chain.repeat:
        where += f", round {page.round} of {chain.repeat + 1}"
    return f"ESCALATED ({where}) on packet {packet_id}: nobody has decided it yet."
