"""The embedded broker hands a consumer whole messages while another publisher writes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from queue import Empty

import pytest
from kombu import Connection

from workers import embedded_broker
from workers.embedded_broker import Transport


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
