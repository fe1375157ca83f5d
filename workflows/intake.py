"""Admitting an escalation request: the packet's checks plus the shape of what comes with it."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workflows.case import Option, parse_options
from workflows.design import Design
from workflows.limits import refusals
from workflows.packet_checks import CheckResult, check_packet
from workflows.packet_schema import DESIGN_FILLED
from workflows.vocabulary import Severity

FINGERPRINT_KINDS = {"none": None, "git": "path", "file": "path", "http": "url"}
REQUEST_KEYS = {"packet", "snapshot", "options", "wake", "owner"}
SNAPSHOT_TEXT = ("verified", "proof", "checked_at")
WAKE_KEYS = {
    "task",
    "queue",
    "webhook",
    "fallback_file",
    "blocked_file",
    "command_file",
    "decision_file",
    "request_file",
}
# Written by the service on its own disk (decision_file: a shell loop's --decision-file;
# request_file: a JobClaw requests/<request_id>.json, settled when the case closes).
LOCAL_FILES = ("blocked_file", "command_file", "decision_file", "request_file")
# Where a wake task goes when the run names no queue: Celery's own default, which a worker
# started without -Q consumes. Never the service's queue: its workers discard the task.
DEFAULT_WAKE_QUEUE = "celery"
QUEUE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/-]{0,199}")


@dataclass(frozen=True)
class Admission:
    """The verdict on a request: problems (refused when any), or the normalised parts."""

    problems: tuple[str, ...]
    check: CheckResult | None = None
    packet: Mapping[str, Any] = field(default_factory=dict)
    snapshot: Mapping[str, Any] = field(default_factory=dict)
    options: tuple[Option, ...] = ()
    wake: Mapping[str, Any] = field(default_factory=dict)
    owner: str | None = None  # the run's owner as a reply identity, e.g. slack:U123
    filled: tuple[str, ...] = ()  # the packet fields the design filled (DESIGN_FILLED)

    @property
    def accepted(self) -> bool:
        return not self.problems


def _check_snapshot(raw: object, problems: list[str]) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problems.append("snapshot: must be an object")
        return {}
    for key in SNAPSHOT_TEXT:
        if key in raw and not isinstance(raw[key], str):
            problems.append(f"snapshot.{key}: must be text")
    ids = raw.get("scheduled_task_ids", [])
    if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
        problems.append("snapshot.scheduled_task_ids: must be a list of task ids")
    fingerprint = raw.get("fingerprint", {"kind": "none"})
    if not isinstance(fingerprint, dict):
        problems.append("snapshot.fingerprint: must be an object like {kind: git, path: .}")
    elif (
        not isinstance(fingerprint.get("kind"), str) or fingerprint["kind"] not in FINGERPRINT_KINDS
    ):
        valid = ", ".join(FINGERPRINT_KINDS)
        problems.append(
            f"snapshot.fingerprint.kind: {fingerprint.get('kind')!r} is not one of {valid}"
        )
    else:
        needed = FINGERPRINT_KINDS[fingerprint["kind"]]
        if needed and not (isinstance(fingerprint.get(needed), str) and fingerprint[needed]):
            problems.append(
                f"snapshot.fingerprint.{needed}: required for kind {fingerprint['kind']}"
            )
    return dict(raw)


def wake_queue(wake: Mapping[str, Any]) -> str:
    """The queue a run's wake task is sent to: the one it named, else Celery's default."""
    queue = wake.get("queue")
    return queue if isinstance(queue, str) and queue else DEFAULT_WAKE_QUEUE


def check_wake(
    raw: object, *, keys: Collection[str] = WAKE_KEYS, service_queue: str | None = None
) -> tuple[dict[str, Any], list[str]]:
    """The run's `wake` object and every problem with it; `service_queue` is refused as the
    wake task's queue (the service's workers would discard the task as unregistered)."""
    problems: list[str] = []
    if raw is None:
        return {}, problems
    if not isinstance(raw, dict):
        problems.append("wake: must be an object like {task: NAME, webhook: URL}")
        return {}, problems
    for key in sorted(set(raw) - set(keys)):
        problems.append(f"wake.{key}: unknown (use {', '.join(sorted(keys))})")
    for key in sorted(set(keys) & set(raw)):
        if not isinstance(raw[key], str) or not raw[key].strip():
            problems.append(f"wake.{key}: must be non-empty text")
    for key in LOCAL_FILES:
        path = raw.get(key)
        if isinstance(path, str) and path.strip() and (not path.startswith("/") or len(path) > 450):
            problems.append(f"wake.{key}: must be an absolute path of at most 450 characters")
    webhook = raw.get("webhook")
    if (
        isinstance(webhook, str)
        and webhook.strip()
        and not webhook.startswith(("http://", "https://"))
    ):
        problems.append("wake.webhook: must be an http(s) URL")
    problems += _queue_problems(raw, service_queue)
    return dict(raw), problems


def _queue_problems(wake: Mapping[str, Any], service_queue: str | None) -> list[str]:
    queue, task = wake.get("queue"), wake.get("task")
    if isinstance(queue, str) and queue.strip():
        if not QUEUE_NAME.fullmatch(queue):
            return [
                "wake.queue: must be a Celery queue name (letters, digits and . _ : @ / -, "
                "at most 200 characters)"
            ]
        if not isinstance(task, str):
            return ["wake.queue: is where wake.task is sent; name wake.task too"]
    if isinstance(task, str) and task.strip() and wake_queue(wake) == service_queue:
        named = "queue" in wake
        return [
            f"wake.queue: {service_queue!r} is this service's own queue"
            + ("" if named else " (Celery's default, used when wake.queue is absent)")
            + ": its workers discard your task; name the queue your worker consumes"
        ]
    return []


def fill_from_design(packet: object, design: Design) -> tuple[object, tuple[str, ...]]:
    """The packet with the fields of DESIGN_FILLED it leaves out (absent or null) taken from
    its severity's tier, and which those were; any other packet is returned as it came, for
    the checks to report."""
    severity = packet.get("severity") if isinstance(packet, dict) else None
    if not isinstance(packet, dict) or severity not in {level.value for level in Severity}:
        return packet, ()
    tier = design.tier(str(severity))
    defaults = {"recipient": tier.recipient.primary, "waiting_behavior": tier.waiting_behavior}
    filled = tuple(key for key in DESIGN_FILLED if packet.get(key) is None)
    return {**packet, **{key: str(defaults[key]) for key in filled}}, filled


def question_key(packet: Mapping[str, Any]) -> str:
    """The same open question from the same run: run, trigger type, normalised blocked_on."""
    blocked_on = " ".join(str(packet.get("blocked_on", "")).lower().split()).rstrip(".!?;: ")
    text = "\x1f".join((str(packet.get("run_id")), str(packet.get("trigger_type")), blocked_on))
    return hashlib.sha256(text.encode()).hexdigest()


def admit(
    request: object,
    *,
    find_secrets: Callable[..., Sequence[Any]] | None = None,
    service_queue: str | None = None,
    design: Design | None = None,
) -> Admission:
    """Check a request `{packet, snapshot?, options?, wake?, owner?}`; refuse every problem.

    With `design`, the packet's recipient and waiting behavior may be left to its tier.
    `service_queue` is the queue the service consumes: a wake task may not be sent there."""
    if not isinstance(request, dict):
        return Admission(("request: must be an object with a packet",))
    # First: what no column, channel or wake-up could carry (over a cap, a NUL, a lone
    # surrogate) is refused before any check reads it, by HTTP, send_task and pipelines alike.
    unfit = refusals(request)
    if unfit:
        return Admission(tuple(unfit))
    problems = [
        f"{key}: unknown field (use packet, snapshot, options, wake, owner)"
        for key in sorted(set(request) - REQUEST_KEYS)
    ]
    packet, filled = (
        fill_from_design(request.get("packet"), design)
        if design is not None
        else (request.get("packet"), ())
    )
    check = check_packet(packet, find_secrets=find_secrets)
    problems += [
        f"packet.{line}" if not line.startswith("packet ") else line for line in check.error_lines()
    ]
    snapshot = _check_snapshot(request.get("snapshot"), problems)
    wake, wake_problems = check_wake(request.get("wake"), service_queue=service_queue)
    problems += wake_problems
    options: tuple[Option, ...] = ()
    try:
        options = parse_options(request.get("options"))
    except ValueError as exc:
        problems.append(str(exc))
    if find_secrets is not None:
        for part in ("snapshot", "options", "wake", "owner"):
            problems += [
                f"{finding.field}: contains a secret ({finding.kind})"
                for finding in find_secrets(request.get(part) or {}, path=part)
            ]
    owner = request.get("owner")
    if owner is not None and (not isinstance(owner, str) or not owner.strip()):
        problems.append("owner: must be the run owner's reply identity, e.g. slack:U123")
    if problems or not isinstance(packet, dict):
        return Admission(tuple(problems), check)
    return Admission(
        (),
        check,
        dict(packet),
        snapshot,
        options,
        wake,
        owner.strip() if isinstance(owner, str) else None,
        filled,
    )
