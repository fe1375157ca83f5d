"""The shared worker: each loan runs that test's settings on that test's queue, and nothing
of one loan runs in the next."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest
from celery.worker import state

from models.settings import Settings
from tests.support.services import REDIS, REDIS_URL, require
from tests.support.shared_worker import SharedWorker, SharedWorkers
from tests.support.waiting import wait_until
from workers.app import make_celery
from workers.runtime import runtime_for


@pytest.fixture(params=["folder", "redis"])
def broker_url(request: pytest.FixtureRequest) -> str | None:
    if request.param == "folder":
        return None
    require(REDIS, "Redis")
    return REDIS_URL


def two_tests(
    tmp_path: Path, broker_url: str | None, shared_workers: SharedWorkers
) -> list[Settings]:
    """Two tests' settings, each with its home and its own queue."""
    both = []
    for name in ("first", "second"):
        settings = Settings(
            home=tmp_path / name, broker_url=broker_url, queue=f"test-{secrets.token_hex(4)}"
        )
        shared_workers.link_broker(settings)
        both.append(settings)
    return both


@pytest.fixture
def loans(
    tmp_path: Path, broker_url: str | None, shared_workers: SharedWorkers
) -> tuple[Settings, Settings, SharedWorker]:
    """Two tests' settings on one broker, and that broker's shared worker."""
    first, second = two_tests(tmp_path, broker_url, shared_workers)
    return first, second, shared_workers.for_settings(first)


def send_wake(settings: Settings, name: str, **options: Any) -> str:
    """Send `test.woken` as a test's own app does: by name, to the test's queue."""
    app = make_celery(settings)
    return app.send_task("test.woken", kwargs={"wake": {"from": name}}, **options).id


def holding(task_id: str) -> bool:
    """The process's worker holds this task for later (taken with a countdown)."""
    return any(request.id == task_id for request in state.scheduled_requests)


def test_a_loan_runs_the_tests_settings_on_its_queue(
    loans: tuple[Settings, Settings, SharedWorker], shared_workers: SharedWorkers
) -> None:
    # Given two tests' settings, each with its own queue
    first, second, shared = loans
    woken: list[dict[str, Any]] = []
    for settings in (first, second):
        # When the worker is lent to each in turn
        with shared.lent(settings, woken.append) as app:
            # Then our tasks read that test's settings, and its queue's messages run
            assert runtime_for(app).settings is settings
            send_wake(settings, settings.home.name)
            wait_until(lambda: woken, timeout=20, what=f"the wake on {settings.queue}")
            assert woken.pop() == {"from": settings.home.name}
    # And given back, the worker is bound to nobody's settings
    assert runtime_for(shared.app).settings is shared.idle
    assert shared is shared_workers.for_settings(second)


def test_nothing_of_one_loan_runs_in_the_next(
    loans: tuple[Settings, Settings, SharedWorker],
) -> None:
    # Given a loan that leaves a task held for later and one still in its queue
    first, second, shared = loans
    first_woken: list[dict[str, Any]] = []
    with shared.lent(first, first_woken.append):
        held = send_wake(first, "held", countdown=1)
        wait_until(lambda: holding(held), timeout=20, what="the held task taken by the worker")
    send_wake(first, "queued")
    # When the next test takes the worker, past when the held task was due
    second_woken: list[dict[str, Any]] = []
    with shared.lent(second, second_woken.append):
        send_wake(second, "marker", countdown=2)
        wait_until(lambda: second_woken, timeout=20, what="the later marker")
    # Then only its own task ran, and nothing reached the first test's hands either
    assert second_woken == [{"from": "marker"}]
    assert first_woken == []


def test_two_brokers_workers_in_one_process_each_run_their_own_apps_tasks(
    tmp_path: Path, shared_workers: SharedWorkers
) -> None:
    # Given a test process with a worker on the folder broker and one on Redis
    require(REDIS, "Redis")
    folder, _ = two_tests(tmp_path / "folder", None, shared_workers)
    redis, _ = two_tests(tmp_path / "redis", REDIS_URL, shared_workers)
    # When tests take them in turn, back and forth
    for settings in (folder, redis, folder):
        woken: list[dict[str, Any]] = []
        with shared_workers.for_settings(settings).lent(settings, woken.append):
            send_wake(settings, settings.queue)
            # Then each wake reaches the test holding the worker that ran it
            wait_until(lambda: woken, timeout=20, what=f"the wake on {settings.queue}")  # noqa: B023
        assert woken == [{"from": settings.queue}]


def test_a_worker_stopped_by_another_workers_stop_is_started_again(
    loans: tuple[Settings, Settings, SharedWorker], shared_workers: SharedWorkers
) -> None:
    # Given the process's worker, lent once
    first, second, shared = loans
    with shared.lent(first, lambda _wake: None):
        pass
    # When Celery's stop flag, one per process, is raised and lowered, as the stop of any
    # other worker in the process does (tests/workers/test_embedded_broker.py starts one)
    state.should_terminate = 0
    try:
        wait_until(lambda: not shared.running, timeout=10, what="the shared worker stopped")
    finally:
        state.should_terminate = None
    # Then the next test gets a running worker all the same, on an event loop of its own
    # (Redis), and its wake runs, a countdown one too (the loop's timer fires it)
    woken: list[dict[str, Any]] = []
    again = shared_workers.for_settings(second)
    assert again is not shared and again.running
    assert again.worker.hub is None or again.worker.hub is not shared.worker.hub
    with again.lent(second, woken.append):
        send_wake(second, "after", countdown=0.5)
        wait_until(lambda: woken, timeout=20, what="the wake after the restart")
    assert woken == [{"from": "after"}]
