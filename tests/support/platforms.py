"""A local HTTP peer that answers as Slack's Web API, Telegram's Bot API and ntfy document.

Paths: `/api/<method>` is Slack (chat.postMessage answers a channel id and a `ts`),
`/bot<token>/<method>` is Telegram (sendMessage answers a message with its id and chat,
getUpdates hands out `updates`),
`/` is ntfy's JSON publishing (answers the message's id), anything else (a Slack
response_url) answers `ok`. Every request is kept with its headers and JSON body.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any

from tests.support.sink import QuietHandler, serve
from tests.support.waiting import wait_until


@dataclass
class Call:
    path: str
    headers: dict[str, str] = field(repr=False)
    body: Any = field(repr=False)
    answer: Any = field(default=None, repr=False)  # what the peer answered

    @property
    def method(self) -> str:
        """The API method: Slack's `chat.update`, Telegram's `sendMessage`, ntfy's `publish`."""
        return "publish" if self.path == "/" else self.path.rsplit("/", 1)[-1]


@dataclass
class Platforms:
    server: ThreadingHTTPServer
    calls: list[Call] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)
    numbers: Iterator[int] = field(default_factory=lambda: itertools.count(100))
    updates: list[dict[str, Any]] = field(default_factory=list)  # what getUpdates hands out

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def of(self, method: str) -> list[Call]:
        with self.changed:
            return [c for c in self.calls if c.method == method]

    def wait(self, predicate: Callable[[list[Call]], bool], timeout: float = 60) -> list[Call]:
        return wait_until(
            lambda: list(self.calls),
            predicate,
            timeout=timeout,
            what="the platform calls expected",
            changed=self.changed,
        )

    def wait_for(self, method: str, count: int = 1, timeout: float = 60) -> list[Call]:
        self.wait(lambda calls: sum(c.method == method for c in calls) >= count, timeout)
        return self.of(method)

    def answer(self, call: Call) -> Any:
        number = next(self.numbers)
        body = call.body if isinstance(call.body, dict) else {}
        if call.path.startswith("/api/"):
            return {"ok": True, "channel": body.get("channel", "C0"), "ts": f"{number}.000200"}
        if call.path.startswith("/bot"):
            if call.method == "getUpdates":
                offset = body.get("offset") or 0
                return {"ok": True, "result": [u for u in self.updates if u["update_id"] >= offset]}
            if call.method in ("sendMessage", "editMessageText"):
                chat = body.get("chat_id")
                message_id = body.get("message_id", number)
                return {"ok": True, "result": {"message_id": message_id, "chat": {"id": chat}}}
            return {"ok": True, "result": True}
        if call.path == "/":
            return {"id": f"m{number}", "sequence_id": body.get("sequence_id")}
        return "ok"


@contextmanager
def platform_peer() -> Iterator[Platforms]:
    peer: Platforms

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            _raw, body = self.posted()
            call = Call(self.path, dict(self.headers), body)
            answer = call.answer = peer.answer(call)
            payload = (answer if isinstance(answer, str) else json.dumps(answer)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            with peer.changed:
                peer.calls.append(call)
                peer.changed.notify_all()

    server = serve(Handler)
    peer = Platforms(server)
    try:
        yield peer
    finally:
        server.shutdown()
        server.server_close()
