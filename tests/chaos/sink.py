"""The channel as a chaos run sees it: a real HTTP server switched between ok, 500, hang and
slow; every POST is recorded on arrival, with the mode that answered it."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any, Literal

from tests.support.sink import QuietHandler, serve

Mode = Literal["ok", "500", "hang", "slow"]
HANG_FOR = 30.0  # longer than any send timeout the suite sets: the sender gives up first
SLOW_FOR = 0.3  # answered, late: the send-to-commit window held open


@dataclass
class Post:
    path: str
    raw: bytes = field(repr=False)
    body: Any = field(repr=False)
    mode: Mode
    at: float = field(default_factory=time.monotonic, repr=False)

    @property
    def text(self) -> str:
        return self.raw.decode(errors="replace")


@dataclass
class ChaosSink:
    server: ThreadingHTTPServer
    mode: Mode = "ok"
    posts: list[Post] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def port(self) -> int:
        return self.server.server_port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def received(self) -> list[Post]:
        with self.lock:
            return list(self.posts)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    @classmethod
    def start(cls) -> ChaosSink:
        sink: ChaosSink

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                raw, body = self.posted()
                mode = sink.mode
                with sink.lock:
                    sink.posts.append(Post(self.path.split("?", 1)[0], raw, body, mode))
                if mode == "hang":
                    time.sleep(HANG_FOR)
                elif mode == "slow":
                    time.sleep(SLOW_FOR)
                status = 500 if mode == "500" else 200
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"{}")
                except OSError:
                    pass  # the sender gave up on a hung request

        sink = cls(serve(Handler))
        return sink
