"""A pipeline's escalation (SPEC §6): read its state once, hold its caps, advise, then file it."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlmodel import Session

from models.db import transaction
from models.store import lock_pipeline_phase, token_taken
from models.tables import Escalation, PipelinePhase
from workers.answering import token_hash
from workers.intake import Accepted, accept, admit_here
from workers.local_files import OutsideRoot, read_bytes, refused_paths, write_atomically
from workers.runtime import Runtime
from workflows.errors import NotFound, PacketRefused, PipelineStateError
from workflows.pipeline import (
    LABELS,
    Counters,
    advisory,
    diagnostics,
    escalation_request,
    offer,
    redacted,
)
from workflows.pipeline_state import (
    ABSENT,
    MALFORMED,
    REQUIRED_FILE,
    STATE_FILES,
    FileReading,
    interpret,
    read_state_file,
)
from workflows.secrets import scan_text

SUMMARY_FILE = "escalation_summary.json"
# Where lullabeast's orchestrator polls for the command (then escalation_output.done).
COMMAND_FILE = "escalation_output.json"
ID_LIMIT = 200  # pipeline_id and phase key the counters (varchar 200)
DEFAULT_RECIPIENT = "pipeline operator"
REUSED_TOKEN = "phase_state.json: escalation_reply_token already names another case; not used"


@dataclass(frozen=True)
class PipelineAccepted:
    """The stored case and the pipeline record it carries (offers, advisory, files)."""

    accepted: Accepted
    pipeline: dict[str, Any]


def counted(phase: PipelinePhase | None) -> Counters:
    """What the service has counted for a phase; nothing yet when it has no row."""
    return Counters(phase.resets, phase.nuclear) if phase is not None else Counters()


def read_state_dir(state_dir: Path, roots: Sequence[Path] = ()) -> dict[str, FileReading]:
    """Each state file read once: its object, absent, or malformed (unreadable counts too,
    and so does a link that leads outside ESCALATE_FILES_ROOT, which is not followed)."""
    readings = {}
    for name in STATE_FILES:
        try:
            raw: bytes | None = read_bytes(state_dir / name, roots)
        except OutsideRoot:
            readings[name] = FileReading(name, MALFORMED, error="outside ESCALATE_FILES_ROOT")
            continue
        except FileNotFoundError:
            raw = None
        except OSError as exc:
            readings[name] = FileReading(name, MALFORMED, error=f"cannot read: {exc.strerror}")
            continue
        readings[name] = read_state_file(name, raw)
    return readings


def raise_pipeline(
    runtime: Runtime,
    *,
    state_dir: Path,
    pipeline_id: str | None = None,
    severity: str = "high",
    recipient: str | None = None,
    command_file: str | None = None,
    wake: dict[str, Any] | None = None,
) -> PipelineAccepted:
    """Read the folder, write escalation_summary.json, then accept the case; PacketRefused
    names every problem when the folder cannot carry an escalation."""
    if not state_dir.is_absolute():
        raise PacketRefused([f"state_dir: must be an absolute path, not {str(state_dir)!r}"])
    roots = runtime.settings.file_roots
    # The folder is checked before it is read; the files the case writes, before the summary.
    outside = refused_paths({"state_dir": str(state_dir)}, roots, prefix="")
    if outside:
        raise PacketRefused(outside)
    # A folder (or its phase_state.json) that is not there is a 404: the request is well
    # formed, what it points at is missing.
    if not state_dir.is_dir():
        raise NotFound(f"state_dir: {state_dir} is not a folder this service can read")
    # One folder, one set of counters, however its path is spelled ('..', links).
    state_dir = Path(os.path.realpath(state_dir))
    # Without a named file the command goes where the orchestrator polls: the state folder.
    command_file = command_file or str(state_dir / COMMAND_FILE)
    wake = {**(wake or {}), "command_file": command_file}
    readings = read_state_dir(state_dir, roots)
    if readings[REQUIRED_FILE].status == ABSENT:
        raise NotFound(f"{REQUIRED_FILE}: required, but not in the state folder ({state_dir})")
    try:
        state = interpret(readings, pipeline_id=pipeline_id, default_pipeline=str(state_dir))
    except PipelineStateError as exc:
        raise PacketRefused([f"{p} (state_dir {state_dir})" for p in exc.problems]) from exc
    too_long = [
        f"{name}: at most {ID_LIMIT} characters, not {len(value)}"
        for name, value in (("pipeline_id", state.pipeline_id), ("phase", state.phase))
        if len(value) > ID_LIMIT
    ]
    if too_long:
        raise PacketRefused(too_long)
    state = redacted(state, scan_text)
    now = datetime.now(UTC)
    with transaction(runtime.engine) as session:
        if state.reply_token and token_taken(
            session, token_hash(runtime.answer_key, state.reply_token)
        ):  # a token another case answers to (a reused one): this case keeps a code of its own
            state = replace(state, reply_token=None, notes=(*state.notes, REUSED_TOKEN))
        phase = lock_pipeline_phase(session, state.pipeline_id, state.phase, now=now)
        # The service's count and the file's, whichever is higher: a stale file keeps the cap.
        counters = counted(phase).merged(Counters(state.resets, state.nuclear))
        phase.resets, phase.nuclear = counters.resets, counters.nuclear
        phase.escalations += 1
        phase.updated_at = now
        number = phase.escalations
    chosen = offer(counters)
    advice = advisory(state, chosen)
    request = escalation_request(
        state,
        counters,
        chosen,
        state_dir=str(state_dir),
        number=number,
        severity=severity,
        recipient=recipient or DEFAULT_RECIPIENT,
        wake=wake,
    )
    admission = admit_here(runtime, request)  # checked once: accept() reuses the verdict
    if not admission.accepted:
        raise PacketRefused(list(admission.problems))
    summary_path = state_dir / SUMMARY_FILE
    # Before the case exists, so before any notification: a dashboard never lags the phone.
    _write_summary(summary_path, advice, chosen.offered, now, roots=roots)
    record: dict[str, Any] = {
        "pipeline_id": state.pipeline_id,
        "phase": state.phase,
        "phase_title": state.phase_title,
        "component": state.component,
        "offered": list(chosen.offered),
        "accepted": list(chosen.accepted),
        "cap_reached": chosen.cap_reached,
        "note": chosen.note,
        "counters": counters.to_json(),
        "advisory": advice,
        "state_dir": str(state_dir),
        "summary_file": str(summary_path),
        "command_file": command_file,
        "files": {name: reading.to_json() for name, reading in readings.items()},
        "notes": list(state.notes),
        "raw_id": state.raw_id,
        "diagnostics": diagnostics(state),
        "labels": {command: LABELS[command] for command in chosen.offered},
        # The pipeline's own correlation token, already in clear in its phase_state.json:
        # replies that start with it reach this case (workers/answering.py case_token).
        **({"reply_token": state.reply_token} if state.reply_token else {}),
    }
    accepted = accept(runtime, request, pipeline=record, admission=admission)
    if accepted.joined:  # the open case keeps the offer it was sent with, and so does the file
        with transaction(runtime.engine) as session:
            row = session.get(Escalation, accepted.id)
            record = dict(row.pipeline or {}) if row is not None else record
        _write_summary(summary_path, record["advisory"], record["offered"], now, roots=roots)
    return PipelineAccepted(accepted, record)


def _write_summary(
    path: Path,
    advice: Mapping[str, str],
    offered: Sequence[str],
    at: datetime,
    *,
    roots: Sequence[Path],
) -> None:
    """escalation_summary.json, whole or not at all; a refusal names it when it cannot be."""
    body = {**advice, "offered": list(offered), "at": at.isoformat()}
    try:
        write_atomically(path, json.dumps(body, indent=2) + "\n", roots=roots)
    except OSError as exc:
        raise PacketRefused([f"{SUMMARY_FILE}: cannot write {path}: {exc.strerror}"]) from None


def phase_counters(runtime: Runtime, pipeline_id: str, phase: str) -> dict[str, Any]:
    """What the service has counted for one phase, and what it would offer now."""
    with transaction(runtime.engine) as session:
        row = session.get(PipelinePhase, (pipeline_id, phase))
        counters = counted(row)
        escalations = row.escalations if row is not None else 0
    chosen = offer(counters)
    return {
        "pipeline_id": pipeline_id,
        "phase": phase,
        **counters.to_json(),
        "escalations": escalations,
        "offered": list(chosen.offered),
        "cap_reached": chosen.cap_reached,
        "note": chosen.note,
    }


def save_counters(session: Session, row: Escalation, after: Counters, *, now: datetime) -> None:
    """Write a phase's counters after a charged command; the row is locked already."""
    pipeline = row.pipeline or {}
    phase = lock_pipeline_phase(session, pipeline["pipeline_id"], pipeline["phase"], now=now)
    phase.resets, phase.nuclear, phase.updated_at = after.resets, after.nuclear, now
    session.add(phase)
