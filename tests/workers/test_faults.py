"""Faults the workflow must survive (SPEC §3, §9): lost messages, killed workers, poison."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from time import monotonic
from typing import Any

import pytest
from celery import Celery
from sqlalchemy import event
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from models.db import make_engine
from models.migrate import upgrade
from models.settings import Settings
from models.tables import Delivery, Escalation, Event
from tests.support.processes import settings_env, stop
from tests.support.sink import HttpSink
from tests.support.waiting import wait_until
from tests.workers.conftest import Harness
from workers import tasks
from workers.answers import answer
from workers.intake import accept
from workers.runtime import runtime_for
from workflows.examples import valid_packet


def soon() -> float:
    """A deadline for running the first stage in the intake's task that is not reached."""
    return monotonic() + 60


def packet(packet_id: str, **changes: Any) -> dict[str, Any]:
    return {**valid_packet(), "packet_id": packet_id, **changes}


def test_the_sweeper_redrives_a_case_whose_message_was_lost(service: Harness) -> None:
    # Given a case stored as accepted whose first nudge never reached the broker
    accepted = accept(runtime_for(service.app), {"packet": packet("esc-lost-1")})
    assert accepted.created and accepted.state == "received"
    # When nothing but the sweeper runs
    # Then it is re-driven: snapshot, routing, notification
    service.sink.wait_for(lambda got: any(r.path == "/ops" for r in got))
    service.in_state(accepted.id, "awaiting", "followed_up", "decided", "closed")
    assert service.events(accepted.id, "snapshot_recorded")


def test_a_stage_that_keeps_failing_is_parked_in_dead_letter(service: Harness) -> None:
    # Given a case whose frozen design was corrupted after intake: routing raises every time
    runtime = runtime_for(service.app)
    accepted = accept(runtime, {"packet": packet("esc-poison-1")})
    service.change(accepted.id, design={"name": "broken"})
    # When the sweeper keeps re-driving it
    parked = service.in_state(accepted.id, "dead_letter", timeout=30)
    # Then it is parked, visibly, after the attempt limit, not looped forever
    [event] = service.events(accepted.id, "dead_lettered")
    assert event.detail == {
        "stuck_in": "snapshotted",
        "attempts": service.settings.max_stage_attempts,
    }
    assert parked.next_action_at is None
    assert service.sink.posts("/ops") == []


def test_snapshot_and_routing_are_written_in_one_commit(celery_app: Celery) -> None:
    # Given a case stored as the escalate task stores it, running its snapshot itself
    runtime = runtime_for(celery_app)
    accepted = accept(
        runtime, {"packet": packet("esc-chain-1")}, first_stage_until=monotonic() + 60
    )
    commits: list[str] = []
    event.listen(runtime.engine, "commit", lambda _connection: commits.append("commit"))
    # When the snapshot runs, routing chained to it, and the pages are sent
    with Session(runtime.engine) as session:
        stored = session.get(Escalation, accepted.id)
        assert stored is not None and stored.attempts == 1  # the snapshot's, counted at intake
    commits.clear()
    tasks.take_snapshot(celery_app, runtime, accepted.id, counted=accepted.counted_snapshot)
    # Then the case is routed, and both stages' writes took one commit before the sends
    with Session(runtime.engine) as session:
        row = session.get(Escalation, accepted.id)
        assert row is not None and row.state == "awaiting"
        kinds = [e.kind for e in session.exec(select(Event).where(Event.escalation_id == row.id))]
    assert kinds[:2] == ["accepted", "snapshot_recorded"] and "routed" in kinds
    with Session(runtime.engine) as session:
        pages = session.exec(select(Delivery).where(Delivery.escalation_id == row.id)).all()
    assert pages and len(commits) == 1 + len(pages)  # one for both stages, then one record per page


def test_routing_that_fails_in_the_snapshots_commit_runs_alone_already_counted(
    celery_app: Celery, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a case whose routing decision raises when chained to its snapshot
    runtime = runtime_for(celery_app)
    accepted = accept(
        runtime, {"packet": packet("esc-count-1")}, first_stage_until=monotonic() + 60
    )
    engine = runtime.engine
    seen: list[tuple[str, int, bool]] = []

    def raises(_runtime: Any) -> Any:
        def decide(*_args: Any) -> None:
            raise RuntimeError("a corrupt design")

        return decide

    def route_alone(
        _app: Celery, _runtime: Any, escalation_id: str, *, counted: bool = False
    ) -> None:
        with Session(engine) as session:
            row = session.get(Escalation, escalation_id)
            assert row is not None
            seen.append((row.state, row.attempts, counted))

    monkeypatch.setattr(tasks, "routing_decision", raises)
    monkeypatch.setattr(tasks, "route_case", route_alone)
    # When the snapshot runs
    tasks.take_snapshot(celery_app, runtime, accepted.id, counted=accepted.counted_snapshot)
    # Then the snapshot alone was committed, with routing's attempt counted in it, and
    # routing ran on its own after: a child killed there every time is still counted
    assert seen == [("snapshotted", 1, True)]


def test_a_chained_stage_that_fails_to_write_leaves_the_stage_before_it_written(
    celery_app: Celery, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given two cases whose reply codes collide (routing writes a hash the database holds
    # unique): the first routed already
    runtime = runtime_for(celery_app)
    monkeypatch.setattr(tasks, "case_token", lambda *_args: "one-code-for-both")
    first, second = (
        accept(
            runtime,
            {"packet": packet(f"esc-clash-{n}", blocked_on=f"Question {n}?")},
            first_stage_until=soon(),
        )
        for n in (1, 2)
    )
    tasks.take_snapshot(celery_app, runtime, first.id, counted=first.counted_snapshot)
    # When the second's snapshot runs with routing chained to it, and routing's write fails
    with pytest.raises(IntegrityError):  # routing, run alone after, fails as it would have
        tasks.take_snapshot(celery_app, runtime, second.id, counted=second.counted_snapshot)
    # Then the snapshot stands, written alone; only routing is left to fail and be counted
    with Session(runtime.engine) as session:
        row = session.get(Escalation, second.id)
        assert row is not None and (row.state, row.attempts) == ("snapshotted", 1)
        kinds = [e.kind for e in session.exec(select(Event).where(Event.escalation_id == row.id))]
    assert kinds == ["accepted", "snapshot_recorded"]


def test_an_intake_stored_too_late_to_run_its_snapshot_counts_no_attempt_for_it(
    celery_app: Celery,
) -> None:
    # Given an intake whose store took longer than the task may spend before its snapshot
    runtime = runtime_for(celery_app)
    accepted = accept(runtime, {"packet": packet("esc-slow-1")}, first_stage_until=monotonic() - 1)
    # Then the case is stored with no attempt counted: the snapshot's own task counts its first
    assert accepted.created and accepted.counted_snapshot is None
    with Session(runtime.engine) as session:
        stored = session.get(Escalation, accepted.id)
        assert stored is not None and stored.attempts == 0
    tasks.take_snapshot(celery_app, runtime, accepted.id)
    with Session(runtime.engine) as session:
        routed = session.get(Escalation, accepted.id)
        assert routed is not None and routed.state == "awaiting"


def test_a_changed_fingerprint_says_reconcile_first(service: Harness, tmp_path: Path) -> None:
    # Given a run whose last good state is a file
    state_file = tmp_path / "state.json"
    state_file.write_text('{"rows": 117}')
    service.send(
        packet("esc-fp-1"),
        snapshot={
            "verified": "117 rows loaded",
            "fingerprint": {"kind": "file", "path": str(state_file)},
        },
    )
    case = service.case("run-8842", "esc-fp-1")
    service.in_state(case.id, "awaiting")
    # When the world changes under the waiting case, then someone decides
    state_file.write_text('{"rows": 118}')
    answer(runtime_for(service.app), case.id, option="approve", responder="ana", channel="test")
    # Then the close entry says reconcile first, and what changed
    closed = service.in_state(case.id, "closed")
    assert closed.outcome == "reconcile_first"
    [close] = service.events(case.id, "closed")
    assert close.detail["recheck"].startswith("reconcile first: file")
    assert "changed from sha256:" in close.detail["recheck"]


def test_scheduled_tasks_of_the_run_are_revoked_and_recorded(service: Harness) -> None:
    # Given the run registered a repeating action: a task due in two seconds
    scheduled = service.app.send_task(
        "test.woken", kwargs={"wake": {"from": "schedule"}}, countdown=4
    )
    # When it escalates naming that task id
    service.send(packet("esc-revoke-1"), snapshot={"scheduled_task_ids": [scheduled.id]})
    case = service.case("run-8842", "esc-revoke-1")
    service.in_state(case.id, "awaiting")
    [event] = service.events(case.id, "snapshot_recorded")
    # Then the snapshot records the revocation
    assert event.detail["revoked_task_ids"] == [scheduled.id]
    if service.settings.embedded_broker:
        # The folder broker's broadcast is best effort (seen to miss in the test worker):
        # the revoke is sent and recorded; that the task never runs is proven on Redis.
        return
    # And the task never runs
    marker = service.app.send_task("test.woken", kwargs={"wake": {"from": "marker"}}, countdown=5)
    service.wait(lambda _s: service.woken.payloads, timeout=20, what="the later marker task")
    assert [p["from"] for p in service.woken.payloads] == ["marker"], marker.id


# --- A real prefork worker process whose child is killed mid-stage ---------------------------


def children_of(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found += [int(child) for child in text]
    return found


@pytest.fixture
def prefork_worker(settings: Settings) -> Iterator[subprocess.Popen[bytes]]:
    upgrade(settings)
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "workers.celery_app",
            "worker",
            "--pool",
            "prefork",
            "--concurrency",
            "1",
            "--without-mingle",
            "--without-gossip",
            "--without-heartbeat",
            "--loglevel",
            "warning",
        ],
        env=settings_env(settings),
        cwd=Path(__file__).resolve().parents[2],
    )
    yield worker
    stop(worker)


# Prefork workers are the production shape, on Redis. The embedded folder broker is run by
# `escalate serve` with a thread pool; its crash case (kill -9 of serve) is in tests/api.
@pytest.mark.parametrize("backend", ["redis-postgres"], indirect=True)
def test_a_worker_child_killed_mid_stage_still_closes_the_case(
    settings: Settings,
    sink: HttpSink,
    prefork_worker: subprocess.Popen[bytes],
    celery_app: Any,
    beat: Any,
) -> None:
    agent = celery_app  # beat runs here; the only worker is the prefork process
    engine = make_engine(settings)
    # Given a snapshot whose probe hangs on its first read (the stage is mid-flight)
    sink.values["/state"] = "v1"
    sink.delay_gets("/state", 60)
    agent.send_task(
        "escalation.escalate",
        kwargs={
            "packet": packet("esc-kill-1"),
            "snapshot": {"fingerprint": {"kind": "http", "url": f"{sink.url}/state"}},
        },
    )
    sink.wait_for_get("/state")
    # When the worker child running it is killed outright
    [child] = children_of(prefork_worker.pid)
    os.kill(child, signal.SIGKILL)
    # Then the stage runs again (redelivered, or re-driven by the sweeper) and the case goes on
    sink.wait_for(lambda got: any(r.path == "/ops" for r in got), timeout=60)
    with Session(engine) as session:
        from sqlmodel import select

        row = session.exec(select(Escalation).where(Escalation.packet_id == "esc-kill-1")).one()

    def state() -> str:
        with Session(engine) as session:
            return session.get(Escalation, row.id).state  # type: ignore[union-attr]

    waiting = ("awaiting", "followed_up")
    wait_until(state, lambda now: now in waiting, timeout=30, every=0.1, what="an open question")
    decided = answer(runtime_for(agent), row.id, option="approve", responder="ana", channel="test")
    assert decided.decided or decided.outcome == "superseded"  # a timeout default may win
    wait_until(state, lambda now: now == "closed", timeout=30, every=0.1, what="the case to close")
    with Session(engine) as session:
        closed = session.get(Escalation, row.id)
        assert closed is not None
    assert closed.state == "closed"
    # The probe's value is the body's digest: nothing the server says reaches the run
    digest = "sha256:" + hashlib.sha256(b"v1").hexdigest()
    assert closed.snapshot and closed.snapshot["fingerprint"]["value"] == digest
    engine.dispose()
