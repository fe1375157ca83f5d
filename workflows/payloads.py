"""One payload type per outbox purpose (stage_results.Purpose): what a delivery row's
`payload` carries. Stages write them through these types and the senders read them through
the readers below, so a misspelt key is a mypy error, not a KeyError at send time.

The column is JSON: a row read back is a plain dict, typed again by its purpose's reader.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict, cast


class Form(TypedDict):
    """A message in one reading's form (notifications.Reading: mail, chat, push...)."""

    title: str
    body: str
    html: str
    notify_type: str


class ChainPlace(TypedDict):
    """Where a CHAIN page stands in its tier's chain (workflows/chains.py)."""

    level: NotRequired[int]
    round: NotRequired[int]


class PageForms(ChainPlace):
    """NOTIFY, FOLLOW_UP, RESOLUTION, CHAIN as a stage writes them: every form of the
    message, keyed by reading; delivery fans the row out into one PagePayload per channel."""

    forms: dict[str, Form]


class PagePayload(ChainPlace):
    """A page as stored: one channel's row, in the form it reads."""

    tag: str  # the apprise tag the channel was found by
    reading: NotRequired[str]
    html: NotRequired[str]
    notify_type: NotRequired[str]
    resent_note: NotRequired[str]  # a page sent again once its channel works (undelivered.py)


class Close(TypedDict):
    """The close entry (SPEC §3 stage 6) every wake-up carries."""

    option: str
    value: str
    decided_by: str | None  # None for a default: nobody's decision
    channel: str
    is_default: bool
    default_action: str | None
    outcome: str
    resumes: bool
    recheck: str
    resume_at: str | None
    clears: Any  # the packet's blocked_on, as the run wrote it
    work_discarded: list[Any]
    reasons: list[dict[str, Any]]  # operators' reasons on the way (workflows/reasons.py)


class AckInstructions(TypedDict):
    """What a woken run calls to say it resumed: an HTTP POST, or a Celery task by name."""

    url: str
    token: str
    task: str
    queue: str
    args: list[str]


class CaseWake(Close):
    """WAKE_TASK, WAKE_WEBHOOK for one case as the close stage writes it: ids and close."""

    escalation_id: str
    run_id: str
    packet_id: str


class AckedWake(CaseWake):
    """A case's wake-up as stored and sent: with how to acknowledge it (workers/wake_acks)."""

    wake_id: str
    ack: AckInstructions


class BlockerWake(TypedDict):
    """WAKE_TASK for a task's set of blockers (SPEC §8), in kandev's words."""

    reason: str
    task_id: str
    resolved_blocker_ids: list[str]
    blockers: list[dict[str, Any]]  # escalation_id, title, outcome, decision (its close)


class AckedBlockerWake(BlockerWake):
    """A task's wake-up as stored and sent: with how to acknowledge it, like a case's."""

    wake_id: str
    ack: AckInstructions


class RequestFilePayload(CaseWake):
    """REQUEST_FILE: the case's wake-up plus when it closed, to settle a JobClaw request."""

    closed_at: str


class UnblockPayload(TypedDict):
    """UNBLOCK: a shell loop's BLOCKED.md becomes DECISION.md (SPEC §5)."""

    escalation_id: str
    blocked_file: str
    decision_file: str
    decisions_log: str
    decision_md: str
    log_line: str
    plan_file: str
    plan_entry: str
    named_file: NotRequired[str]  # the loop's own --decision-file


class CommandRecord(TypedDict):
    """COMMAND_FILE: what a pipeline's orchestrator reads to act (SPEC §6)."""

    command: Any  # the decision's value: the command
    source: str
    timestamp: str
    escalation_id: str
    pipeline_id: Any
    phase: Any
    decided_by: str | None
    channel: str | None
    is_default: bool
    outcome: str | None
    recheck: str | None
    reasons: list[dict[str, Any]]  # operators' reasons on the way (workflows/reasons.py)
    closed_at: str


Payload = (
    PageForms
    | PagePayload
    | CaseWake
    | AckedWake
    | BlockerWake
    | AckedBlockerWake
    | RequestFilePayload
    | UnblockPayload
    | CommandRecord
)


# Readers: a stored row's payload, typed by the purpose the caller has already checked.
def page_forms(raw: Mapping[str, Any]) -> PageForms:
    return cast(PageForms, raw)


def page(raw: Mapping[str, Any]) -> PagePayload:
    return cast(PagePayload, raw)


def unblocking(raw: Mapping[str, Any]) -> UnblockPayload:
    return cast(UnblockPayload, raw)


def case_wake(raw: Mapping[str, Any]) -> CaseWake:
    return cast(CaseWake, raw)


def request_file(raw: Mapping[str, Any]) -> RequestFilePayload:
    return cast(RequestFilePayload, raw)


def command(raw: Mapping[str, Any]) -> CommandRecord:
    return cast(CommandRecord, raw)
