"""A read-only view of one escalation, as the pure stage functions see it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from workflows.errors import InvalidInput
from workflows.states import State

# A decision of stopping, not resuming, whatever its label (SPEC §3.6 stop outcome).
STOP_WORDS = frozenset({"stop", "abort", "deny", "reject", "cancel", "halt", "no"})

DEFAULT_OPTIONS: tuple[Mapping[str, Any], ...] = (
    {"label": "approve", "value": "approve", "description": "Do what the run asks, then resume."},
    {"label": "deny", "value": "deny", "description": "Do not do it; the run stops."},
)


@dataclass(frozen=True)
class Option:
    """One answer the operator may give."""

    label: str
    value: str
    description: str = ""
    resumes: bool = True
    destructive: bool = False  # answering it takes an explicit CONFIRM step


@dataclass(frozen=True)
class Case:
    """What the stages need to know about one escalation."""

    id: str
    run_id: str
    packet_id: str
    state: State
    packet: Mapping[str, Any]
    snapshot: Mapping[str, Any] = field(default_factory=dict)
    options: Sequence[Option] = ()
    wake: Mapping[str, Any] = field(default_factory=dict)
    cites_id: str | None = None
    pipeline: Mapping[str, Any] = field(default_factory=dict)  # SPEC §6 cases only
    created_at: datetime | None = None
    routed_at: datetime | None = None
    extended: timedelta = timedelta()  # what operators added to the tier's timeout
    acknowledged_by: str | None = None  # who said they are on it (reminders stop)


def parse_options(raw: object) -> tuple[Option, ...]:
    """Options from an intake payload; the defaults when none are given. Raises ValueError."""
    if raw is None or raw == []:
        raw = list(DEFAULT_OPTIONS)
    if not isinstance(raw, list):
        raise InvalidInput("options: must be a list of {label, value, description}")
    options: list[Option] = []
    for index, entry in enumerate(raw):
        if isinstance(entry, str):
            entry = {"label": entry}
        if not isinstance(entry, Mapping):
            raise InvalidInput(f"options[{index}]: must be text or an object with a label")
        label = entry.get("label")
        if not isinstance(label, str) or not label.strip():
            raise InvalidInput(f"options[{index}].label: missing or empty")
        value = entry.get("value", label)
        if not isinstance(value, str) or not value.strip():
            raise InvalidInput(f"options[{index}].value: must be non-empty text")
        for name, text in (("label", label), ("value", value)):
            if any(not ch.isprintable() for ch in text):  # would break one-line layouts
                raise InvalidInput(f"options[{index}].{name}: must be one line of printable text")
        description = entry.get("description", "")
        if not isinstance(description, str):
            raise InvalidInput(f"options[{index}].description: must be text")
        resumes = entry.get("resumes", value.strip().lower() not in STOP_WORDS)
        destructive = entry.get("destructive", False)
        for name, flag in (("resumes", resumes), ("destructive", destructive)):
            if not isinstance(flag, bool):
                raise InvalidInput(f"options[{index}].{name}: must be true or false")
        options.append(
            Option(label.strip(), value.strip(), description.strip(), resumes, destructive)
        )
    labels = [option.label.lower() for option in options]
    if len(set(labels)) != len(labels):
        raise InvalidInput("options: two options share a label")
    return tuple(options)


def options_to_json(options: Sequence[Option]) -> list[dict[str, Any]]:
    """Options as stored in SQL and shown by the API."""
    return [
        {
            "label": o.label,
            "value": o.value,
            "description": o.description,
            "resumes": o.resumes,
            **({"destructive": True} if o.destructive else {}),
        }
        for o in options
    ]
