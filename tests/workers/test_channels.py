"""The apprise adapter against a real local HTTP sink: outcomes, retries, per-message buttons."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.support.sink import HttpSink
from workers.channels import FAILED, SENT, Channel, ChannelBook, send


def book_for(tmp_path: Path, url: str, tag: str = "ops") -> ChannelBook:
    config = tmp_path / "apprise.yaml"
    config.write_text(f"urls:\n  - {url}:\n      tag: {tag}\n")
    return ChannelBook(config)


def test_a_failing_channel_is_retried_within_one_attempt(tmp_path: Path, sink: HttpSink) -> None:
    sink.script("/hook", (500, 0), (200, 0))
    [channel] = book_for(tmp_path, f"json://{sink.url.removeprefix('http://')}/hook").channels(
        "ops"
    )
    outcome = send(channel, title="t", body="b", tries=3, first_backoff=0.01, timeout=5)
    assert (outcome.state, outcome.tries) == (SENT, 2)


def test_a_channel_that_keeps_failing_reports_why(tmp_path: Path, sink: HttpSink) -> None:
    sink.script("/hook", *[(503, 0)] * 3)
    [channel] = book_for(tmp_path, f"json://{sink.url.removeprefix('http://')}/hook").channels(
        "ops"
    )
    outcome = send(channel, title="t", body="b", tries=2, first_backoff=0.01, timeout=5)
    assert outcome.state == FAILED and outcome.tries == 2 and outcome.error


def test_an_unknown_tag_has_no_channel(tmp_path: Path, sink: HttpSink) -> None:
    assert book_for(tmp_path, f"json://{sink.url.removeprefix('http://')}/x").channels("nope") == []


def test_sends_at_once_on_one_channel_each_carry_their_own_message(
    tmp_path: Path, sink: HttpSink
) -> None:
    # Given one channel and eight threads sending through it together
    [channel] = book_for(tmp_path, f"json://{sink.url.removeprefix('http://')}/hook").channels(
        "ops"
    )
    start = threading.Barrier(8)

    def twenty(thread: int) -> list[str]:
        start.wait()
        return [
            send(channel, title="t", body=f"message {thread}.{n}", tries=1, first_backoff=0.01,
                 timeout=5).state
            for n in range(20)
        ]  # fmt: skip

    with ThreadPoolExecutor(8) as pool:
        outcomes = [state for states in pool.map(twenty, range(8)) for state in states]
    # Then every send arrived once, with its own body (no plugin or notifier shared)
    assert outcomes == [SENT] * 160
    bodies = sorted(post.body["message"] for post in sink.posts("/hook"))
    assert bodies == sorted(f"message {t}.{n}" for t in range(8) for n in range(20))


def test_each_thread_sends_through_its_own_notifier() -> None:
    # The 160-send test above rarely catches a shared notifier (the race between loading a
    # thread's plugin and sending it is short): the property itself, held here.
    from workers.channels import _fresh_plugin, _notifier

    plugin = _fresh_plugin("json://127.0.0.1:9/hook")
    mine = _notifier(plugin)
    assert _notifier(plugin) is mine  # kept for the thread: one locale set-up, not one a send
    with ThreadPoolExecutor(2) as pool:
        theirs = list(
            pool.map(lambda _: id(_notifier(_fresh_plugin("json://127.0.0.1:9/x"))), range(2))
        )
    assert id(mine) not in theirs
    assert list(mine) == [plugin]  # another thread's plugin never lands in this one


def test_a_send_leaves_apprise_chatter_out_of_the_log_but_not_its_failures(
    tmp_path: Path, sink: HttpSink, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    sink.script("/hook", (200, 0), (500, 0))
    [channel] = book_for(tmp_path, f"json://{sink.url.removeprefix('http://')}/hook").channels(
        "ops"
    )
    assert send(channel, title="t", body="b", tries=1, first_backoff=0.01, timeout=5).state == SENT
    assert [r.getMessage() for r in caplog.records if r.name.startswith("apprise")] == []
    assert (
        send(channel, title="t", body="b", tries=1, first_backoff=0.01, timeout=5).state == FAILED
    )
    failures = [r for r in caplog.records if r.name.startswith("apprise")]
    assert failures and all(r.levelno >= logging.WARNING for r in failures)


def test_a_url_its_plugin_refuses_fails_naming_the_channel_not_its_secret(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # (a worker run in this process before may have left the root logger at ERROR)
    caplog.set_level(logging.WARNING, logger="workers.channels")
    # Given a channel whose URL apprise parses but whose plugin refuses it (a Slack URL
    # missing its second token, its first one a secret)
    url = "slack://T1secretXYZ"
    channel = Channel(
        tag="ops", name="slack://T...Z #0123", service=SimpleNamespace(url=lambda: url)
    )
    # When a page is sent on it
    outcome = send(channel, title="t", body="b", tries=1, first_backoff=0.01, timeout=5)
    # Then the send failed, saying so, and nothing we logged quotes the URL's secret
    assert (outcome.state, outcome.error) == (
        FAILED,
        f"{channel.name}: apprise cannot load this URL",
    )
    ours = [r.getMessage() for r in caplog.records if r.name == "workers.channels"]
    assert ours == ["apprise cannot load a slack:// URL (AppriseImproperlyConfigured)"]
    assert "secretXYZ" not in caplog.text
