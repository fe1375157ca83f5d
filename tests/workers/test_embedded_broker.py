"""The embedded broker hands a consumer whole messages while another publisher writes."""

from __future__ import annotations

import json
import os
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from queue import Empty
from typing import Any

import pytest
from celery.contrib.testing.worker import start_worker
from kombu import Connection, Queue

from models.settings import Settings
from workers import embedded_broker
from workers.app import make_celery
from workers.embedded_broker import Arrivals, Transport


def test_a_message_still_being_written_is_invisible_to_a_consumer(tmp_path: Path) -> None:
    # Given a file a publisher is still writing: with our transport it has the partial name
    options = {
        "data_folder_in": str(tmp_path),
        "data_folder_out": str(tmp_path),
        "control_folder": str(tmp_path / "control"),
    }
    (tmp_path / ".1_abc.q.msg.partial").write_bytes(b'{"body": "trunc')
    # When a consumer looks for work / Then it sees none, rather than a broken message
    with (
        Connection("filesystem://", transport=Transport, transport_options=options) as conn,
        pytest.raises(Empty),
    ):
        conn.default_channel._get("q")


def test_the_queue_name_appears_only_once_the_message_is_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a watch on the moment the message file gets its queue name
    seen: list[tuple[list[str], bytes]] = []
    real_replace = os.replace

    def watching(source: str, target: str) -> None:
        seen.append((sorted(p.name for p in tmp_path.iterdir()), Path(source).read_bytes()))
        real_replace(source, target)

    monkeypatch.setattr(embedded_broker.os, "replace", watching)
    options = {
        "data_folder_in": str(tmp_path),
        "data_folder_out": str(tmp_path),
        "control_folder": str(tmp_path / "control"),
    }
    # When a message is published
    with Connection("filesystem://", transport=Transport, transport_options=options) as conn:
        conn.default_channel._put("q", {"body": "whole"})
    # Then before the rename no consumer-visible file existed, and the content was whole
    [(names_before, content)] = seen
    assert not any(name.endswith(".q.msg") for name in names_before)
    assert json.loads(content)["body"]
    [written] = [p for p in tmp_path.iterdir() if p.is_file()]
    assert written.name.endswith(".q.msg")


def test_a_worker_on_the_embedded_broker_stops_within_a_second(tmp_path: Path) -> None:
    # Given an idle worker consuming from the embedded broker
    app = make_celery(Settings(home=tmp_path / "home", queue="stop-test"))
    with ExitStack() as running:
        running.enter_context(
            start_worker(app, pool="threads", perform_ping_check=False, shutdown_timeout=10)
        )
        # When it is told to stop
        asked = time.monotonic()
    # Then it is gone within a poll or two, not after Celery's 2 s drains (it took about 4 s)
    assert time.monotonic() - asked < 1.0


def test_a_drain_outside_a_stopping_worker_still_waits_its_whole_timeout(tmp_path: Path) -> None:
    # Given an empty queue being consumed, and no worker stopping
    options = {
        "data_folder_in": str(tmp_path),
        "data_folder_out": str(tmp_path),
        "control_folder": str(tmp_path / "control"),
        "polling_interval": 0.05,
    }
    with (
        Connection("filesystem://", transport=Transport, transport_options=options) as conn,
        conn.Consumer(Queue("q"), callbacks=[lambda *_: None]),
    ):
        # When it drains with a timeout (as a wait for control replies does)
        began = time.monotonic()
        with pytest.raises(TimeoutError):
            conn.drain_events(timeout=0.5)
    # Then it gave the timeout in full, not one poll
    assert time.monotonic() - began >= 0.5


needs_inotify = pytest.mark.skipif(embedded_broker.INotify is None, reason="inotify is Linux's")


def _options(folder: Path, **more: Any) -> dict[str, Any]:
    return {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "control_folder": str(folder / "control"),
        **more,
    }


@needs_inotify
@pytest.mark.parametrize(
    "transport",
    [Transport, None],
    ids=["ours: renamed in whole", "an agent's plain kombu: written in place"],
)
def test_a_message_that_lands_ends_the_wait_between_polls(
    tmp_path: Path, transport: type[Transport] | None
) -> None:
    # Given a consumer's wait on its folder
    arrivals = Arrivals(str(tmp_path))
    try:
        # When a message is published into the folder
        options = _options(tmp_path)
        with Connection("filesystem://", transport=transport, transport_options=options) as conn:
            assert isinstance(conn.transport, Transport) is (transport is Transport)
            conn.default_channel._put("q", {"body": "nudge"})
        # Then the wait ends woken once the file is whole, rather than running out its 30 s
        assert arrivals.wait(30) is True
    finally:
        arrivals.close()


@needs_inotify
def test_a_message_still_being_written_wakes_nobody(tmp_path: Path) -> None:
    # Given a consumer's wait on its folder
    arrivals = Arrivals(str(tmp_path))
    try:
        # When a publisher writes a message under its hidden name, not yet renamed in
        (tmp_path / ".1_abc.q.msg.partial").write_bytes(b'{"body": "trunc')
        # Then the wait runs its course: there is nothing to take yet
        assert arrivals.wait(0.2) is False
    finally:
        arrivals.close()


@pytest.fixture
def watched_waits(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, list[bool]]:
    """Set once the test's consumer starts waiting; each of its waits' results (True: woken,
    not run out). Waits of other threads (the process's shared worker) go by unwatched."""
    waiting, woken = threading.Event(), []
    real_wait = Arrivals.wait
    test_thread = threading.current_thread()

    def watched(self: Arrivals, seconds: float) -> bool:
        if threading.current_thread() is not test_thread:
            return real_wait(self, seconds)
        waiting.set()
        woken.append(real_wait(self, seconds))
        return woken[-1]

    monkeypatch.setattr(Arrivals, "wait", watched)
    return waiting, woken


@needs_inotify
def test_a_drain_takes_a_message_published_while_it_waits_without_polling(
    tmp_path: Path, watched_waits: tuple[threading.Event, list[bool]]
) -> None:
    # Given a consumer draining an empty queue whose poll is an hour apart
    waiting, woken = watched_waits
    got: list[Any] = []
    options = _options(tmp_path, polling_interval=3600)
    with (
        Connection("filesystem://", transport=Transport, transport_options=options) as conn,
        conn.Consumer(Queue("q"), callbacks=[lambda body, message: got.append(body)]),
    ):

        def publish() -> None:
            waiting.wait(30)
            with Connection(
                "filesystem://", transport=Transport, transport_options=options
            ) as other:
                other.Producer().publish({"n": 1}, routing_key="q")

        publisher = threading.Thread(target=publish)
        publisher.start()
        # When another connection publishes a message while the consumer waits
        conn.drain_events(timeout=30)
        publisher.join()
    # Then the drain took it when it landed: its wait was woken, not run out
    assert got == [{"n": 1}]
    assert woken == [True]


@needs_inotify
def test_a_drain_with_its_prefetch_full_takes_the_next_message_once_one_is_acked(
    tmp_path: Path, watched_waits: tuple[threading.Event, list[bool]]
) -> None:
    # Given a consumer allowed one unacked message, holding one, and a second one queued
    waiting, woken = watched_waits
    got: list[Any] = []
    options = _options(tmp_path, polling_interval=3600)
    with Connection("filesystem://", transport=Transport, transport_options=options) as conn:
        consumer = conn.Consumer(Queue("q"), callbacks=[lambda body, message: got.append(message)])
        consumer.qos(prefetch_count=1)
        with consumer:
            producer = conn.Producer()
            for n in (1, 2):
                producer.publish({"n": n}, routing_key="q")
            conn.drain_events(timeout=30)
            [held] = got
            waiting.clear()
            # When the task holding the first message acks it (in its own thread) while
            # the consumer waits for a free slot
            acker = threading.Thread(target=lambda: waiting.wait(30) and held.ack())
            acker.start()
            conn.drain_events(timeout=30)
            acker.join()
    # Then the drain took the second message as the slot freed: its wait was woken
    # (in either order: two files named in the same instant sort by their random part)
    assert sorted(message.payload["n"] for message in got) == [1, 2]
    assert woken[-1] is True
