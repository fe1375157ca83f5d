"""A pipeline's state files (SPEC §6) read into one view: phase, failing part, counters."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from workflows.errors import PipelineStateError

REQUIRED_FILE = "phase_state.json"
OPTIONAL_FILES = (
    "failure_context.json",
    "current_phase.json",
    "planner_output.json",
    "executor_output.json",
    "reviewer_output.json",
)
STATE_FILES = (REQUIRED_FILE, *OPTIONAL_FILES)
COMPONENTS = ("planner", "executor", "reviewer")
COUNT_LIMIT = 1_000_000  # no pipeline retries more; a larger number is a broken file
READ, ABSENT, MALFORMED = "read", "absent", "malformed"


@dataclass(frozen=True)
class FileReading:
    """What one state file held: read (with its object), absent, or malformed (and why)."""

    name: str
    status: str
    data: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None
    digest: str | None = None  # sha256 of the bytes read: the baseline the recheck compares

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, **({"error": self.error} if self.error else {})}


def read_state_file(name: str, raw: bytes | None) -> FileReading:
    """Decode one file's bytes (None when it does not exist) as a JSON object."""
    if raw is None:
        return FileReading(name, ABSENT)
    digest = "sha256:" + hashlib.sha256(raw).hexdigest()  # as workers/probes.py hashes files
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return FileReading(
            name, MALFORMED, error=f"not UTF-8 text ({exc.reason} at byte {exc.start})"
        )
    except json.JSONDecodeError as exc:
        return FileReading(name, MALFORMED, error=f"not JSON: {exc.msg} (line {exc.lineno})")
    if not isinstance(data, dict):
        return FileReading(name, MALFORMED, error=f"must hold a JSON object, not {_kind(data)}")
    return FileReading(name, READ, data, digest=digest)


@dataclass(frozen=True)
class PipelineState:
    """The facts an escalation needs, drawn from the files that were there."""

    pipeline_id: str
    phase: str
    phase_title: str
    component: str | None
    trigger_reason: str
    failure: str
    gate_errors: tuple[str, ...]
    retries: Mapping[str, int]
    resets: int  # escalation_resets in the orchestrator's file (may be stale)
    nuclear: int
    completed: tuple[str, ...]
    files: Mapping[str, FileReading]
    notes: tuple[str, ...]  # fields that were there but unusable: reported, not fatal


def _kind(value: object) -> str:
    return {
        list: "a list",
        str: "text",
        int: "a number",
        float: "a number",
        bool: "true/false",
    }.get(type(value), "null" if value is None else type(value).__name__)


def _text(*sources: tuple[Mapping[str, Any], tuple[str, ...]]) -> str:
    """The first non-blank text under any of the keys, in the order given."""
    for data, keys in sources:
        for key in keys:
            value = data.get(key)
            if isinstance(value, str) and value.strip():
                return " ".join(value.split())
            if isinstance(value, int | float) and not isinstance(value, bool):
                return str(value)
    return ""


def _whole(value: object) -> int | None:
    """A count as orchestrators write it: 3, 3.0 or "3"; None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        number = int(value.strip())  # isdigit alone admits "²", which int() refuses
    else:
        return None
    return number if 0 <= number <= COUNT_LIMIT else None


def _count(data: Mapping[str, Any], key: str, notes: list[str]) -> int:
    """A retry counter: shown to the operator, so an unusable one is noted and left out."""
    number = _whole(data.get(key, 0))
    if number is None:  # the value itself is never repeated: it may be anything, a secret too
        notes.append(f"{REQUIRED_FILE}: {key} is {_kind(data.get(key))}, not a count; left out")
        return 0
    return number


def _cap_count(data: Mapping[str, Any], key: str) -> int:
    """A counter a cap depends on: one the service cannot read refuses the escalation,
    because reading it as 0 would offer resets the pipeline may have spent."""
    value = data.get(key)
    number = 0 if value is None else _whole(value)
    if number is None:
        problem = f"{key} must be a count from 0 to {COUNT_LIMIT}, not {_kind(value)}"
        raise PipelineStateError([f"{REQUIRED_FILE}: {problem}"])
    return number


def _lines(value: object) -> tuple[str, ...]:
    """Gate errors or completed steps: a list of text (or of {message}) or one text."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return ()
    lines = []
    for item in value:
        if isinstance(item, Mapping):
            item = item.get("message") or item.get("error") or item.get("name") or ""
        if isinstance(item, str) and item.strip():
            lines.append(" ".join(item.split()))
    return tuple(lines)


def _component(
    named: str,
    reason: str,
    outputs: Mapping[str, Mapping[str, Any]],
    phase_state: Mapping[str, Any],
) -> str | None:
    """Which part failed: as named, else as the trigger reason says, else from the outputs."""
    if named:
        return named.lower()
    mentioned = [c for c in COMPONENTS if c in reason.lower()]
    if len(mentioned) == 1:
        return mentioned[0]
    if phase_state.get("reviewer_rejected") is True:
        return "executor"  # the reviewer rejected the executor's work
    failed = [
        name
        for name, data in outputs.items()
        if str(data.get("status") or data.get("verdict") or "").lower()
        in {"failed", "fail", "error", "rejected", "reject"}
    ]
    return failed[0] if len(failed) == 1 else None


def interpret(
    readings: Mapping[str, FileReading], *, pipeline_id: str | None, default_pipeline: str
) -> PipelineState:
    """One view of the files; PipelineStateError when the required file or the phase is missing."""
    phase_file = readings.get(REQUIRED_FILE, FileReading(REQUIRED_FILE, ABSENT))
    if phase_file.status == ABSENT:
        raise PipelineStateError([f"{REQUIRED_FILE}: required, but not in the state folder"])
    if phase_file.status == MALFORMED:
        raise PipelineStateError([f"{REQUIRED_FILE}: {phase_file.error}"])
    state = phase_file.data

    def data(name: str) -> Mapping[str, Any]:
        reading = readings.get(name)
        return reading.data if reading is not None else {}

    current, failure = data("current_phase.json"), data("failure_context.json")
    phase = _text(
        (state, ("phase", "phase_number")), (current, ("phase", "number", "phase_number"))
    )
    if not phase:
        raise PipelineStateError(
            [f'phase: not found; put "phase" in {REQUIRED_FILE} or current_phase.json']
        )
    pipeline = (pipeline_id or "").strip() or _text((state, ("pipeline_id", "pipeline")))
    notes: list[str] = []
    retries = {}
    for key in sorted(state):
        if key.endswith("_retries"):
            retries[key.removesuffix("_retries")] = _count(state, key, notes)
    reason = _text((state, ("escalation_trigger_reason",)), (failure, ("reason", "trigger")))
    outputs = {c: data(f"{c}_output.json") for c in COMPONENTS}
    named = _text((failure, ("component", "failed_component")), (state, ("failed_component",)))
    return PipelineState(
        pipeline_id=pipeline or default_pipeline,
        phase=phase,
        phase_title=_text(
            (current, ("description", "title", "name")), (state, ("phase_description",))
        ),
        component=_component(named, reason, outputs, state),
        trigger_reason=reason or "the pipeline asked for a human",
        failure=_text(
            (failure, ("error", "message", "failure", "summary")),
            (state, ("last_error", "last_error_code")),
        ),
        gate_errors=_lines(failure.get("gate_errors", state.get("gate_errors"))),
        retries={k: v for k, v in retries.items() if v},
        resets=_cap_count(state, "escalation_resets"),
        nuclear=_cap_count(state, "nuclear_resets"),
        completed=_lines(current.get("completed")),
        files=dict(readings),
        notes=tuple(notes),
    )
