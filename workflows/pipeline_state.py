"""A pipeline's state files (SPEC §6) read into one view: phase, failing part, counters."""

from __future__ import annotations

import hashlib
import json
import re
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
UNKNOWN_PHASE = "unknown"
# lullabeast's correlation token, `{queue entry id}.{6 hex}` ("e1.ab12cd", "run.3f9a0c"), kept
# in phase_state.json as escalation_reply_token: the operator's reply starts with it.
REPLY_TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_-]{1,40}\.[0-9a-fA-F]{6,32}")
LISTED = 5  # names shown per list (tests written, files missing): the rest are counted


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
    raw_id: str = ""  # the roadmap's id of the phase (current_phase.json raw_id, "CORE-4")
    category: str = ""
    exit_criteria: str = ""
    attempt: str = ""  # failure_context.json attempt_number
    failure_reasons: tuple[str, ...] = ()  # "executor: <failure_reason>" from the agents
    blocking_issues: tuple[str, ...] = ()
    tests_written: tuple[str, ...] = ()
    tests_passing: bool | None = None
    manifest: tuple[str, ...] = ()  # files the executor says it wrote (file_manifest)
    on_disk: tuple[str, ...] = ()  # files the orchestrator found (files_present_on_disk)
    reply_token: str | None = None  # the pipeline's own correlation token, when it keeps one


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
    """One view of the files; PipelineStateError when phase_state.json is absent or unusable."""
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
    notes: list[str] = []
    raw_id = _text(
        (current, ("raw_id",)),
        (state, ("current_phase_raw_id", "phase_raw_id")),
        (failure, ("phase_raw_id",)),
    )
    phase = _text(
        (state, ("phase", "phase_number", "current_phase")),
        (current, ("phase_number", "phase", "number")),
    )
    if not phase:
        # phase_state.json alone is enough to escalate (lullabeast keeps the phase elsewhere):
        # the roadmap id stands in for the number, and with neither the case still goes out.
        phase = raw_id or UNKNOWN_PHASE
        if not raw_id:
            notes.append(
                "phase: not named in phase_state.json, current_phase.json or "
                f"failure_context.json; counted as {UNKNOWN_PHASE!r}"
            )
    pipeline = (pipeline_id or "").strip() or _text((state, ("pipeline_id", "pipeline")))
    retries = {}
    for key in sorted(state):
        if key.endswith("_retries"):
            retries[key.removesuffix("_retries")] = _count(state, key, notes)
    reason = _text((state, ("escalation_trigger_reason",)), (failure, ("reason", "trigger")))
    outputs = {c: data(f"{c}_output.json") for c in COMPONENTS}
    named = _text(
        (failure, ("component", "failed_component", "failing_agent")),
        (state, ("failed_component", "failing_agent")),
    )
    reasons = _failure_reasons(failure, outputs)
    executor = outputs["executor"]
    token = _reply_token(state, notes)
    return PipelineState(
        pipeline_id=pipeline or default_pipeline,
        phase=phase,
        phase_title=_text(
            (current, ("detail", "description", "title", "name")), (state, ("phase_description",))
        ),
        component=_component(named, reason, outputs, state),
        trigger_reason=reason or "the pipeline asked for a human",
        failure=_text(
            (failure, ("error", "message", "failure", "summary")),
            (state, ("last_error",)),
        )
        or (reasons[0].split(": ", 1)[1] if reasons else ""),
        gate_errors=_gate_errors(failure, state),
        retries={k: v for k, v in retries.items() if v},
        resets=_cap_count(state, "escalation_resets"),
        nuclear=_cap_count(state, "nuclear_resets"),
        completed=_lines(current.get("completed")),
        files=dict(readings),
        notes=tuple(notes),
        raw_id=raw_id if raw_id != phase else "",
        category=_text((current, ("category",))),
        exit_criteria="; ".join(_lines(current.get("exit_criteria"))),
        attempt=_text((failure, ("attempt_number", "attempt"))),
        failure_reasons=reasons,
        blocking_issues=_lines(
            failure.get("blocking_issues") or outputs["reviewer"].get("blocking_issues")
        ),
        tests_written=_lines(failure.get("tests_written") or executor.get("tests_written")),
        tests_passing=_passing(failure, executor),
        manifest=_lines(failure.get("file_manifest") or executor.get("file_manifest")),
        on_disk=_lines(failure.get("files_present_on_disk", failure.get("files_on_disk"))),
        reply_token=token,
    )


def _failure_reasons(
    failure: Mapping[str, Any], outputs: Mapping[str, Mapping[str, Any]]
) -> tuple[str, ...]:
    """Each agent's own account of its failure: `<agent>: <failure_reason>`, once each."""
    found: dict[str, str] = {}
    agent = _text((failure, ("failing_agent",))) or "agent"
    if text := _text((failure, ("agent_failure_reason",))):
        found[agent.lower()] = text
    for name, output in outputs.items():
        if name not in found and (text := _text((output, ("failure_reason",)))):
            found[name] = text
    return tuple(f"{name}: {text}" for name, text in found.items())


def _gate_errors(failure: Mapping[str, Any], state: Mapping[str, Any]) -> tuple[str, ...]:
    """Gate error codes as lullabeast writes them (failure_context.json gate_error_codes, else
    phase_state.json last_error_code), or gate errors in any one list."""
    for value in (
        failure.get("gate_error_codes"),
        failure.get("gate_errors"),
        state.get("gate_errors"),
        state.get("last_error_code"),
    ):
        if lines := _lines(value):
            return lines
    return ()


def _passing(failure: Mapping[str, Any], executor: Mapping[str, Any]) -> bool | None:
    """tests_passing (failure_context.json), else the executor's test_results.all_passing."""
    value = failure.get("tests_passing")
    if not isinstance(value, bool):
        results = executor.get("test_results")
        value = results.get("all_passing") if isinstance(results, Mapping) else None
    return value if isinstance(value, bool) else None


def _reply_token(state: Mapping[str, Any], notes: list[str]) -> str | None:
    """phase_state.json escalation_reply_token, when it has the pipeline's token shape."""
    value = state.get("escalation_reply_token")
    if value is None or value == "":
        return None
    if isinstance(value, str) and REPLY_TOKEN_SHAPE.fullmatch(value.strip()):
        return value.strip()
    notes.append(
        f"{REQUIRED_FILE}: escalation_reply_token is not token-shaped; the case's own code is used"
    )
    return None
