"""The apprise adapter against a real local HTTP sink: outcomes, retries, per-message buttons."""

from __future__ import annotations

from pathlib import Path

from tests.support.sink import HttpSink
from workers.channels import FAILED, SENT, ChannelBook, is_ntfy, send
from workers.inbound.ntfy import answer_actions


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


def test_ntfy_gets_this_messages_answer_buttons(tmp_path: Path, sink: HttpSink) -> None:
    # Given an ntfy channel (served by the sink) and the buttons for one case
    [channel] = book_for(tmp_path, f"ntfy://{sink.url.removeprefix('http://')}/alerts").channels(
        "ops"
    )
    assert is_ntfy(channel)
    actions = answer_actions(
        [("approve", "http://svc/v1/inbound/ntfy"), ("deny", "http://svc/v1/inbound/ntfy")],
        token="K7Q2MX9D4P",
    )
    # When the message is sent with them
    outcome = send(
        channel,
        title="t",
        body="b",
        tries=1,
        first_backoff=0.01,
        timeout=5,
        url_params={"actions": actions},
    )
    # Then ntfy received the buttons with the message
    assert outcome.state == SENT
    [received] = sink.posts()
    assert received.headers.get("X-Actions") == actions
    assert "body=K7Q2MX9D4P approve" in actions.replace('"', "")
