"""The chat platform as bench/e2e.py and bench/rss.py see it: an HTTP server in a process of
its own.

A platform runs on another machine. Served from the driver's own process, as the tests' sink
is, every notice the workers post takes the driver's GIL from the answers it sends one after
another, so the sink's load showed as the service's answer time. Here the server counts
POSTs by path and answers 200 `{}`; `GET /count?path=/ops` reads a count.

Run: python -m bench.platform_sink (prints its port, then serves until killed)
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar, cast
from urllib.parse import parse_qs, urlencode, urlsplit

import uvloop

from bench.common import REPO, wait_for


class _Platform(asyncio.Protocol):
    """One connection: a request read whole, answered, closed.

    The platform's CPU shares this machine's two cores with what is measured, and the
    service posts four times a case where the floor posts once: so a bare protocol on uvloop,
    no thread, stream or header parser a request. CPU a post (2,000 `requests.post`s):
    http.server's ThreadingHTTPServer 0.58 ms, this on asyncio's own loop 0.29, on uvloop 0.13.
    """

    counts: ClassVar[Counter[str]] = Counter()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport, self.received = cast(asyncio.Transport, transport), b""

    def data_received(self, data: bytes) -> None:
        self.received += data
        head, found, body = self.received.partition(b"\r\n\r\n")
        if not found:
            return
        request_line, _, headers = head.decode("latin-1").partition("\r\n")
        method, target = request_line.split(" ", 2)[:2]
        length = 0
        for line in headers.split("\r\n"):
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        if len(body) < length:
            return
        asked = urlsplit(target)
        if method == "POST":
            self.counts[asked.path] += 1
            self._answer(b"{}")
        elif asked.path == "/count" and (path := parse_qs(asked.query).get("path", [""])[0]):
            self._answer(str(self.counts[path]).encode())
        else:  # a caller's typo fails now, not at a timeout
            self._answer(b"GET /count?path=/some/path", "404 Not Found")

    def _answer(self, payload: bytes, status: str = "200 OK") -> None:
        head = f"HTTP/1.1 {status}\r\nContent-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
        self.transport.write(head.encode() + payload)
        self.transport.close()


async def _serve() -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(_Platform, "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


def serve() -> None:
    """Count POSTs by path until killed; the port goes to stdout first."""
    uvloop.run(_serve())


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
