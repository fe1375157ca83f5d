"""The chat platform as bench/e2e.py and bench/rss.py see it: an HTTP server in a process of
its own.

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
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from bench.common import REPO, wait_for


def serve() -> None:
    """Count POSTs by path until killed; the port goes to stdout first."""
    counts: Counter[str] = Counter()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with lock:
                counts[urlsplit(self.path).path] += 1
            self._answer(b"{}")

        def do_GET(self) -> None:
            asked = urlsplit(self.path)
            path = parse_qs(asked.query).get("path", [""])[0]
            if asked.path != "/count" or not path:  # a caller's typo fails now, not at a timeout
                self._answer(b"GET /count?path=/some/path", status=404)
                return
            with lock:
                count = counts[path]
            self._answer(str(count).encode())

        def _answer(self, payload: bytes, status: int = 200) -> None:
            self.send_response(status)
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
        [sys.executable, "-m", "bench.platform_sink"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        port = process.stdout.readline().strip()
        if not port.isdigit():
            raise RuntimeError(f"the platform sink did not start (exit code {process.wait()})")
        yield PlatformSink(f"http://127.0.0.1:{port}")
    finally:
        process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()


class PlatformSink:
    """What the server received, read over HTTP."""

    def __init__(self, url: str) -> None:
        self.url = url

    def count(self, path: str) -> int:
        """How many POSTs `path` has received."""
        query = urlencode({"path": path})
        with urllib.request.urlopen(f"{self.url}/count?{query}", timeout=10) as response:
            return int(response.read())

    def wait_for(self, path: str, count: int, *, timeout: float) -> None:
        """Poll until `path` has received `count` POSTs in all (as often as bench.e2e polls
        SQL: each poll is a connection and a thread in the sink)."""
        wait_for(
            lambda: self.count(path) >= count,
            timeout=timeout,
            what=f"{count} POSTs to {path}",
            every=0.05,
        )


if __name__ == "__main__":
    serve()
