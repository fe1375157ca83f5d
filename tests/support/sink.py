"""A real local HTTP sink that apprise and webhooks post to; tests wait on what it receives."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.waiting import wait_until


class QuietHandler(BaseHTTPRequestHandler):
    """A local peer's handler: logs nothing, and reads a POST's body as JSON when it is."""

    def posted(self) -> tuple[bytes, Any]:
        """The raw body and its JSON (the text itself when it is not JSON; None if empty)."""
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            return raw, json.loads(raw) if raw else None
        except ValueError:
            return raw, raw.decode(errors="replace")

    def log_message(self, *_args: Any) -> None:
        pass


def serve(handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    """`handler` on a spare loopback port, in daemon threads. shutdown() waits for
    serve_forever's next poll: 0.02 s here, not the default 0.5 s, for each test."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    return server


@dataclass
class Received:
    path: str  # the one field a failed wait prints
    headers: dict[str, str] = field(repr=False)
    raw: bytes = field(repr=False)
    body: Any = field(repr=False)
    at: float = field(default_factory=time.perf_counter, repr=False)


@dataclass
class HttpSink:
    """Records every POST; answers with queued (status, delay, text) per path, else 200."""

    server: ThreadingHTTPServer
    received: list[Received] = field(default_factory=list)
    scripted: dict[str, deque[tuple[int, float, str]]] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)
    get_delays: dict[str, deque[float]] = field(default_factory=dict)
    gets: list[str] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def script(self, path: str, *responses: tuple[int, float]) -> None:
        """The next responses for `path`: (status, seconds to wait before answering)."""
        self.scripted.setdefault(path, deque()).extend((s, d, "") for s, d in responses)

    def delay_gets(self, path: str, *delays: float) -> None:
        """Hold the next GETs of `path` for these many seconds each (a hanging probe)."""
        self.get_delays.setdefault(path, deque()).extend(delays)

    def wait_for_get(self, path: str, count: int = 1, timeout: float = 60) -> None:
        wait_until(
            lambda: list(self.gets),
            lambda gets: gets.count(path) >= count,
            timeout=timeout,
            what=f"GET {path} (x{count})",
            changed=self.changed,
        )

    def posts(self, path: str | None = None) -> list[Received]:
        with self.changed:
            return [r for r in self.received if path is None or r.path.split("?", 1)[0] == path]

    def wait_for(self, predicate: Callable[[list[Received]], bool], timeout: float = 60) -> None:
        """Block until `predicate(received)` holds; fail with what arrived if it never does."""
        wait_until(
            lambda: self.received,
            predicate,
            timeout=timeout,
            what="the sink to see what was expected",
            changed=self.changed,
        )


def start_sink() -> HttpSink:
    sink: HttpSink

    class Handler(QuietHandler):
        def _answer(self, status: int, text: str) -> None:
            payload = text.encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:  # the HTTP fingerprint probe reads values here
            with sink.changed:
                sink.gets.append(self.path)
                sink.changed.notify_all()
            delays = sink.get_delays.get(self.path)
            if delays:
                time.sleep(delays.popleft())
            self._answer(200, sink.values.get(self.path, ""))

        def do_POST(self) -> None:
            raw, body = self.posted()
            queue = sink.scripted.get(self.path.split("?", 1)[0])
            status, delay, _ = queue.popleft() if queue else (200, 0.0, "")
            if delay:
                time.sleep(delay)
            with sink.changed:
                sink.received.append(Received(self.path, dict(self.headers), raw, body))
                sink.changed.notify_all()
            self._answer(status, "{}")

    sink = HttpSink(serve(Handler))
    return sink
