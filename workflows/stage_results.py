"""What a stage decides, as values: the stage names, events, outbox rows and decisions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from workflows.states import State


class Stage(StrEnum):
    """The workflow's steps; the workers map each to its Celery task."""

    SNAPSHOT = "snapshot"
    ROUTE = "route"
    DELIVER = "deliver"
    FOLLOW_UP = "follow_up"
    TIMEOUT = "timeout"
    CLOSE = "close"


SYSTEM = "system"


@dataclass(frozen=True)
class EventSpec:
    """An event row to append."""

    kind: str
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Outbound:
    """A delivery (outbox row) to write before anything is sent."""

    purpose: str  # notify, follow_up, wake_task, wake_webhook
    channel: str  # apprise, celery, webhook
    target: str
    role: str = "primary"
    title: str = ""
    body: str = ""
    payload: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DecisionSpec:
    """A decision to record; at most one per case, the database enforces it."""

    option: str
    value: str
    resumes: bool
    decided_by: str
    channel: str
    is_default: bool = False


@dataclass(frozen=True)
class StageResult:
    """What a stage decided: the next state and everything to write with it."""

    state: State
    events: tuple[EventSpec, ...]
    next_action_at: datetime | None = None
    outbound: tuple[Outbound, ...] = ()
    updates: Mapping[str, Any] = field(default_factory=dict)
    decision: DecisionSpec | None = None
    next_stage: Stage | None = None
