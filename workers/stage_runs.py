"""The frame every stage task runs in: count the attempt, lock the case, apply, nudge the next."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any, Protocol

from celery import Celery
from sqlalchemy import bindparam, exists
from sqlalchemy import select as sa_select
from sqlalchemy import update as sa_update
from sqlmodel import Session

from models.db import commit_setting, runs_alone, transaction
from models.store import (
    CaseState,
    append_event,
    apply_result,
    citing_open_cases,
    lock_escalation,
    write_case,
)
from models.tables import CASES, Escalation
from workers import names
from workers.runtime import Runtime
from workflows.errors import StoreUnavailable
from workflows.stage_results import Stage, StageResult
from workflows.states import State, check_transition

log = logging.getLogger(__name__)

Decide = Callable[[Session, Escalation, datetime], StageResult | None]
# Takes the next stage's work in the stage's own transaction (the case row as just
# written) and returns what runs it here once that commits, instead of the broker (`finish`).
Inline = Callable[[Session, Runtime, Escalation, datetime], Callable[[Celery], None]]


def nudge(app: Celery, stage: Stage | None, escalation_id: str) -> None:
    """Enqueue a stage; if the broker is down the sweeper re-drives it, so only log."""
    if stage is None:
        return
    try:
        app.send_task(names.FOR_STAGE[stage], args=[escalation_id])
    except Exception:
        log.exception("could not enqueue %s for %s; the sweeper will", stage, escalation_id)


class Counted(Protocol):
    """A stage run here, told whether its attempt is already counted."""

    def __call__(
        self, app: Celery, runtime: Runtime, escalation_id: str, *, counted: bool = False
    ) -> None: ...


def run_after(stage: Counted) -> Inline:
    """A next stage run here once the commit is done; its attempt is counted in this
    transaction (`begin_attempt`'s count without a commit of its own)."""

    def take(
        _session: Session, runtime: Runtime, row: Escalation, _now: datetime
    ) -> Callable[[Celery], None]:
        row.attempts = 1  # after apply_result reset it: this is the next stage's first
        escalation_id = row.id
        return lambda app: stage(app, runtime, escalation_id, counted=True)

    return take


@dataclass(frozen=True)
class Attempt:
    """A stage's attempt as counted: what the stage needs of the case before its own lock."""

    escalation_id: str
    attempts: int
    snapshot: dict[str, Any]
    cited: bool  # an open case stands in for this one (a page of it gave up)


# One statement built once counts, locks and reads: the case comes back only if still in
# the expected state, with only what a stage reads before its own transaction.
_COUNT_ATTEMPT = (
    sa_update(CASES)
    .where(CASES.c.id == bindparam("case"), CASES.c.state == bindparam("expected"))
    .values(attempts=CASES.c.attempts + 1, updated_at=bindparam("now"))
    .returning(CASES.c.attempts, CASES.c.snapshot, citing_open_cases(bindparam("case")).exists())
)
# PostgreSQL: the count is a statement that commits by itself, not waiting for the disk (a
# lost count only means one more try): one round trip where BEGIN, the count and COMMIT took
# three, before every stage a task runs (docs/PERFORMANCE.md).
_ASYNC_COMMIT = commit_setting()
_COUNT_ATTEMPT_ALONE = _COUNT_ATTEMPT.where(exists(sa_select(_ASYNC_COMMIT))).add_cte(_ASYNC_COMMIT)
# Parks the case only as that count left it: not one moved on since (reassigned, its count
# reset), nor twice when two runs raced past the limit (the last count parks).
_PARK = sa_update(CASES).where(
    CASES.c.id == bindparam("case"),
    CASES.c.state == bindparam("was"),
    CASES.c.attempts == bindparam("counted"),
)


def begin_attempt(runtime: Runtime, escalation_id: str, expected: State) -> Attempt | None:
    """Count this attempt in its own commit; park the case in dead_letter when it keeps failing.
    Returns the attempt, or None: no effect."""
    now = datetime.now(UTC)
    engine = runtime.engine
    alone = runs_alone(engine)
    count = {"case": escalation_id, "expected": expected.value, "now": now, "sync": "off"}
    with transaction(engine, bookkeeping=True, one_statement=True) as session:
        found = (
            session.connection()
            .execute(_COUNT_ATTEMPT_ALONE if alone else _COUNT_ATTEMPT, count)
            .first()
        )
    if found is None:
        return None  # already done by an earlier run of this message: no effect
    attempts, snapshot, cited = found
    attempt = Attempt(escalation_id, attempts, dict(snapshot or {}), bool(cited))
    if attempt.attempts <= runtime.settings.max_stage_attempts:
        return attempt
    _park(runtime, attempt, expected, now=now)
    return None


def _park(runtime: Runtime, attempt: Attempt, expected: State, *, now: datetime) -> None:
    """A case whose stage kept failing, parked in dead_letter in a transaction after the
    count's (a crash between them only means the next try parks it)."""
    parked = check_transition(expected, State.DEAD_LETTER)
    case = {"case": attempt.escalation_id, "was": expected.value, "counted": attempt.attempts}
    with transaction(runtime.engine) as session:
        moved = session.connection().execute(
            _PARK, {**case, "state": parked.value, "next_action_at": None}
        )
        if not moved.rowcount:
            return
        stuck = {"stuck_in": expected.value, "attempts": attempt.attempts - 1}
        append_event(
            session, CaseState(attempt.escalation_id, parked), "dead_lettered", stuck, now=now
        )
    log.error(
        "escalation %s parked in dead_letter after %d attempts in %s",
        attempt.escalation_id,
        attempt.attempts - 1,
        expected.value,
    )


def _apply_chained(
    session: Session,
    row: Escalation,
    result: StageResult,
    chained: Mapping[Stage, Decide],
    *,
    now: datetime,
) -> StageResult:
    """Apply each chained next stage in turn; the last result applied."""
    while (stage := result.next_stage) is not None and stage in chained:
        following = chained[stage](session, row, now)  # raising, it is left out (`finish`)
        if following is None:
            return result
        apply_result(session, row, following, now=now)
        result = following
    return result


def finish(
    app: Celery,
    runtime: Runtime,
    escalation_id: str,
    expected: State,
    decide: Decide,
    *,
    repeatable: bool = False,
    chained: Mapping[Stage, Decide] | None = None,
    inline: Mapping[Stage, Inline] | None = None,
) -> None:
    """Lock the case, check it is still where the stage left it, apply the decision, nudge.

    `repeatable`: a stage with no effect outside SQL, whose loss in a database crash only
    means it runs again; its commit does not wait for the disk (see `transaction`).
    `chained`: next stages decided and applied in this same transaction (one lock, one
    commit for both); one that raises, deciding or writing, is left out, and runs as it
    would have on its own.
    `inline`: next stages claimed in this transaction and run in this task once the commit
    is done, saving a broker hop (the outbox: half the reply → wake time on the folder
    broker) and the claim's own transaction; a crash before one runs leaves its claim to
    expire, and the sweeper makes it good."""
    write = partial(_write, runtime, escalation_id, expected, decide, repeatable, inline or {})
    try:
        written = write(chained or {})
    except StoreUnavailable:
        raise
    except Exception:
        if not chained:
            raise
        # A chained stage failed, deciding or writing (a unique key, say), and rolled this
        # stage's writes back with it: this stage is written alone, the chained one runs on
        # its own after.
        log.exception("%s: a chained stage failed; the stage is written alone", expected)
        written = write({})
    if written is None:
        return
    next_stage, run_here = written
    if run_here is not None:
        run_here(app)
    else:
        nudge(app, next_stage, escalation_id)


def _write(
    runtime: Runtime,
    escalation_id: str,
    expected: State,
    decide: Decide,
    repeatable: bool,
    inline: Mapping[Stage, Inline],
    chained: Mapping[Stage, Decide],
) -> tuple[Stage | None, Callable[[Celery], None] | None] | None:
    """finish's transaction: the next stage and what runs it here, or None: no effect."""
    now = datetime.now(UTC)
    # A chained stage's writes are not repeatable: the commit waits for the disk then.
    with transaction(runtime.engine, bookkeeping=repeatable and not chained) as session:
        row = lock_escalation(session, escalation_id)
        if row is None or row.state != expected:
            return None
        result = decide(session, row, now)
        if result is None:
            return None
        apply_result(session, row, result, now=now)
        result = _apply_chained(session, row, result, chained, now=now)
        take = inline.get(result.next_stage) if result.next_stage else None
        run_here = take(session, runtime, row, now) if take else None
        write_case(session, row)
        return result.next_stage, run_here
