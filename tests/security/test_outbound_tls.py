"""Dialling the judged address keeps HTTPS honest: the name is still what TLS verifies.

A guard for the way workers/outbound.py connects (to the address it checked, with the
original Host header and server name), not a regression test of issue #14: the old code,
which let httpx resolve the name itself, passed it too.
"""

from __future__ import annotations

import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.services import require_program
from workers import outbound
from workflows.outbound import OutboundPolicy, parse_allow_list

NAME = "hooks.test"


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[int, dict[str, str], Path]]:
    """An HTTPS server on 127.0.0.1 with a certificate for hooks.test only."""
    require_program("openssl", "it makes the test's certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    make = "req -x509 -newkey rsa:2048 -nodes -days 1 -keyout KEY -out CERT -subj /CN=NAME"
    argv = make.replace("KEY", str(key)).replace("CERT", str(cert)).replace("NAME", NAME).split()
    subprocess.run(
        ["openssl", *argv, "-addext", f"subjectAltName=DNS:{NAME}"],
        check=True,
        capture_output=True,
    )
    seen: dict[str, str] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen["host"] = self.headers["Host"]
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_args: Any) -> None:
            pass

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)

    def sni(_sock: ssl.SSLObject, name: str | None, _context: ssl.SSLContext) -> None:
        seen["sni"] = str(name)

    context.sni_callback = sni
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_port, seen, cert
    server.shutdown()
    server.server_close()


def test_https_to_a_checked_address_verifies_the_name_asked_for(
    tls_server: tuple[int, dict[str, str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given two names that resolve to the same allowed address, and a certificate for one
    port, seen, cert = tls_server
    real = socket.getaddrinfo

    def resolve(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host in (NAME, "other.test"):
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", int(port)))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    monkeypatch.setattr(outbound, "tls", lambda: httpx.create_ssl_context(trust_env=True))
    policy = OutboundPolicy(parse_allow_list("127.0.0.1/32"))
    # When each is fetched
    with outbound.request("GET", f"https://{NAME}:{port}/x", policy=policy, timeout=5) as ok:
        status = ok.status_code
    # Then the certified name is reached with its own Host header and server name
    assert status == 200
    assert seen == {"sni": NAME, "host": f"{NAME}:{port}"}
    # And the other name fails verification, though it led to the same address
    with (
        pytest.raises(httpx.ConnectError, match="certificate"),
        outbound.request("GET", f"https://other.test:{port}/x", policy=policy, timeout=5),
    ):
        pass
