"""The chat platform as bench/e2e.py sees it: an HTTP server in a process of its own.

A platform runs on another machine. Served from the driver's own process, as the tests' sink
is, every notice the workers post takes the driver's GIL from the answers it sends one after
another, so the sink's load showed as the service's answer time. Here the server counts
POSTs by path and answers 200 `{}`; `GET /count?path=/ops` reads a count.

Run: python -m bench.platform_sink (prints its port, then serves until killed)
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


def serve() -> None:
    counts: Counter[str] = Counter()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with lock:
                counts[urlsplit(self.path).path] += 1
            self._answer(b"{}")

        def do_GET(self) -> None:
            path = parse_qs(urlsplit(self.path).query).get("path", [""])[0]
            with lock:
                self._answer(str(counts[path]).encode())

        def _answer(self, payload: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *_args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_port, flush=True)
    server.serve_forever()


@contextmanager
def platform_sink() -> Iterator[PlatformSink]:
    """The server in its own process for the block, killed after it."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.platform_sink"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        yield PlatformSink(f"http://127.0.0.1:{int(process.stdout.readline())}")
    finally:
        process.kill()
        process.wait()


class PlatformSink:
    """What the server received, read over HTTP."""

    def __init__(self, url: str) -> None:
        self.url = url

    def count(self, path: str) -> int:
        with urllib.request.urlopen(f"{self.url}/count?path={path}", timeout=10) as response:
            return int(response.read())

    def wait_for(self, path: str, count: int, *, timeout: float) -> None:
        """Poll until `path` has received `count` POSTs in all."""
        deadline = time.monotonic() + timeout
        while (got := self.count(path)) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{path}: {got} of {count} POSTs after {timeout:.0f} s")
            time.sleep(0.02)


if __name__ == "__main__":
    serve()
