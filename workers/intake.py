"""Accepting an escalation: admit it, store it with its frozen design, nudge the first stage."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from time import monotonic
from typing import Any

from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_delay
from tenacity import wait_exponential_jitter as backoff

from models.db import transaction
from models.store import (
    add_event,
    append_event,
    insert_escalation,
    new_id,
    open_case_for_question,
)
from models.tables import Escalation
from workers.local_files import WRITTEN_FILES, refused_paths
from workers.outbound import refusal_of
from workers.runtime import Runtime
from workflows.case import options_to_json
from workflows.errors import PacketRefused, StoreUnavailable
from workflows.intake import Admission, admit, question_key
from workflows.limits import unstorable
from workflows.secrets import find_secrets, scan_text
from workflows.stage_results import EventSpec, Resolution
from workflows.states import State

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Accepted:
    """The stored case; `created` is False when this (run, packet) was already accepted."""

    id: str
    state: str
    created: bool
    warnings: tuple[str, ...] = ()
    joined: bool = False  # the same open question: joined that case, nobody paged again
    # A case created with its first stage's attempt counted (`accept(first_stage_until=...)`):
    # its snapshot spec, so that stage need not count or read it again.
    counted_snapshot: dict[str, Any] | None = None


def admit_here(runtime: Runtime, request: Any) -> Admission:
    """The intake checks plus this host's bounds on the files the case will read or write
    and on the addresses its webhook and http probe will reach."""
    admission = admit(
        request,
        find_secrets=find_secrets,
        service_queue=runtime.settings.queue,
        design=runtime.design,  # one place fills recipient and waiting, for every way in
    )
    if not admission.accepted:  # only an admitted wake has its fields checked for shape
        return admission
    roots = runtime.settings.file_roots
    files = {key: admission.wake.get(key) for key in WRITTEN_FILES}
    problems = refused_paths(files, roots, prefix="wake.")
    # The recheck reads this file or runs git in this folder: the same bounds apply.
    path = (admission.snapshot.get("fingerprint") or {}).get("path")
    if roots and isinstance(path, str) and not path.startswith("/"):
        problems.append("snapshot.fingerprint.path: must be absolute (ESCALATE_FILES_ROOT is set)")
    else:
        problems += refused_paths({"path": path}, roots, prefix="snapshot.fingerprint.")
    fingerprint = admission.snapshot.get("fingerprint") or {}
    urls = {
        "wake.webhook": admission.wake.get("webhook"),
        "snapshot.fingerprint.url": fingerprint.get("url")
        if fingerprint.get("kind") == "http"
        else None,
    }
    for name, url in urls.items():
        if isinstance(url, str) and (why := refusal_of(url, runtime.outbound)):
            problems.append(f"{name}: {why}")
    return replace(admission, problems=tuple(problems)) if problems else admission


def accept(
    runtime: Runtime,
    request: Any,
    *,
    record_refusal: bool = False,
    cites_id: str | None = None,
    pipeline: dict[str, Any] | None = None,
    admission: Admission | None = None,
    first_stage_until: float | None = None,
) -> Accepted:
    """Store the request as a case in state `received`; raise PacketRefused when refused.

    `admission` is `admit_here`'s verdict on this very request, when the caller already has it.
    `first_stage_until`: a time on the monotonic clock. A new case stored before then is
    stored with its snapshot stage's attempt counted (begin_attempt's count without its own
    transaction), and the caller runs that stage itself (Accepted.counted_snapshot).
    """
    now = datetime.now(UTC)
    admission = admission or admit_here(runtime, request)
    problems = list(admission.problems)
    if problems:
        if record_refusal:
            _record_refusal(runtime, request, problems, now=now)
        raise PacketRefused(problems)
    packet = admission.packet
    first_stage_here = first_stage_until is not None and monotonic() <= first_stage_until
    row = Escalation(
        id=new_id(),
        run_id=packet["run_id"],
        packet_id=packet["packet_id"],
        severity=packet["severity"],
        trigger_type=packet["trigger_type"],
        state=State.RECEIVED,
        packet=dict(packet),
        snapshot=dict(admission.snapshot),
        options=options_to_json(admission.options),
        wake=dict(admission.wake),
        design=runtime.design_json,
        design_hash=runtime.design_hash,
        cites_id=cites_id,
        owner=admission.owner,
        question_key=question_key(packet),
        pipeline=pipeline,
        created_at=now,
        updated_at=now,
        attempts=1 if first_stage_here else 0,
    )
    warnings = admission.check.warnings if admission.check else ()
    event = EventSpec(
        "accepted",
        {
            "warnings": list(warnings),
            "design": runtime.design_hash,
            **({"filled_by_design": list(admission.filled)} if admission.filled else {}),
            **({"cites": cites_id} if cites_id else {}),
        },
    )
    with transaction(runtime.engine) as session:
        open_case = open_case_for_question(session, row)
        if open_case is not None:
            append_event(session, open_case, "joined", {"packet_id": row.packet_id}, now=now)
            return Accepted(
                open_case.id, open_case.state.value, False, tuple(warnings), joined=True
            )
        stored, created = insert_escalation(session, row, event, now=now)
        counted = dict(stored.snapshot or {}) if created and first_stage_here else None
        return Accepted(stored.id, stored.state, created, tuple(warnings), counted_snapshot=counted)


def accept_when_stored(runtime: Runtime, request: Any, **options: Any) -> Accepted:
    """`accept`, tried again while the database does not answer (intake is idempotent per run
    and packet) for at most `intake_retry_for` seconds, pauses capped at
    `intake_retry_max_delay`; then StoreUnavailable, and the caller keeps the request."""
    settings = runtime.settings
    retrying = Retrying(
        retry=retry_if_exception_type(StoreUnavailable),
        wait=backoff(multiplier=0.1, jitter=0.2, max=settings.intake_retry_max_delay),
        stop=stop_after_delay(settings.intake_retry_for),
        before_sleep=_log_retry,
        reraise=True,
    )
    accepted: Accepted = retrying(accept, runtime, request, **options)
    return accepted


def _log_retry(state: RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome else None
    log.warning("intake not stored (%s); trying again, attempt %d", error, state.attempt_number)


def refuse_unadmitted(runtime: Runtime, request: Any, problem: str) -> None:
    """Store the visible end of a request the service could not admit (its ids, the
    reason; never its text), for the sender to find by run and packet id."""
    _record_refusal(runtime, request, [problem], now=datetime.now(UTC))


def _record_refusal(runtime: Runtime, request: Any, problems: list[str], *, now: datetime) -> None:
    """A refused task-borne request leaves a visible row: its ids and problems, never its text."""
    packet = request.get("packet") if isinstance(request, dict) else None
    packet = packet if isinstance(packet, dict) else {}

    def text(key: str, default: str) -> str:
        value = packet.get(key)
        if not isinstance(value, str) or not value.strip() or scan_text(value) or unstorable(value):
            return default  # a missing id, or one holding a secret or a NUL, is never stored
        return value[:200]

    row = Escalation(
        id=new_id(),
        run_id=text("run_id", "-"),
        packet_id=text("packet_id", f"refused-{now:%s}"),
        severity=text("severity", "-")[:16],
        trigger_type=text("trigger_type", "-")[:32],
        state=State.REFUSED,
        problems=problems,
        created_at=now,
        updated_at=now,
        closed_at=now,
        outcome=Resolution.REFUSED,
    )
    with transaction(runtime.engine) as session:
        stored, created = insert_escalation(
            session, row, EventSpec("refused", {"errors": problems}), now=now
        )
        if not created:  # a resend of an accepted packet that now fails: say so on that case
            add_event(session, stored, "resend_refused", {"errors": problems}, now=now)
    log.warning("escalation refused: %s", "; ".join(problems))
