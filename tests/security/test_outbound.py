"""A run's webhook and http probe reach only what the operator allows (issue #14, item 2).

The targets here are local servers on 127.0.0.1, standing for an internal admin port: the
test settings allow only the shared sink (and, in this module, the redirector), so every
other local port is as internal as a real one.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
import socket
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from models.settings import Settings
from models.tables import Delivery
from tests.support.sink import HttpSink, QuietHandler, serve, start_sink
from tests.workers.conftest import Harness
from workers.answers import answer
from workers.intake import accept
from workers.runtime import runtime_for
from workflows.examples import valid_packet

pytestmark = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
AGENT = {"Authorization": "Bearer agent-token"}
SETTING = "set ESCALATE_OUTBOUND_ALLOW"


@pytest.fixture
def internal() -> Iterator[HttpSink]:
    """A local server nobody allowed: what an agent must not reach."""
    server = start_sink()
    yield server
    server.server.shutdown()
    server.server.server_close()


@pytest.fixture
def redirector(internal: HttpSink) -> Iterator[ThreadingHTTPServer]:
    """An allowed server that answers every GET and POST with a redirect to `internal`."""

    class Handler(QuietHandler):
        def _redirect(self, status: int) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(status)
            self.send_header("Location", f"{internal.url}/secret")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            self._redirect(302)

        def do_POST(self) -> None:
            self._redirect(307)  # 307 keeps the method and body: a POST would be replayed

    server = serve(Handler)
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def settings(settings: Settings, redirector: ThreadingHTTPServer) -> Settings:
    allow = f"{settings.outbound_allow},127.0.0.1:{redirector.server_port}"
    return settings.model_copy(update={"outbound_allow": allow})


def intake(settings: Settings) -> TestClient:
    return TestClient(create_app(settings.model_copy(update={"api_tokens": "agent:agent-token"})))


def request(packet_id: str, *, webhook: str | None = None, probe: str | None = None) -> Any:
    body: dict[str, Any] = {"packet": {**valid_packet(), "packet_id": packet_id}}
    if webhook:
        body["wake"] = {"webhook": webhook}
    if probe:
        body["snapshot"] = {"fingerprint": {"kind": "http", "url": probe}}
    return body


def nothing_reached(internal: HttpSink) -> None:
    assert internal.gets == [] and internal.posts() == []


TARGETS = {  # URL (PORT is the internal server's) -> what the refusal says
    "loopback": ("http://127.0.0.1:PORT/admin", r"127\.0\.0\.1 is not allowed \(loopback\)"),
    "a name for loopback": (
        "http://localhost:PORT/admin",
        r"localhost \((127\.0\.0\.1|::1)\) is not allowed \(loopback\)",
    ),
    "IPv6 loopback": ("http://[::1]:PORT/admin", r"::1 is not allowed \(loopback\)"),
    "IPv4 as IPv6": (
        "http://[::ffff:127.0.0.1]:PORT/admin",
        r"::ffff:127\.0\.0\.1 \(127\.0\.0\.1\) is not allowed \(loopback\)",
    ),
    "decimal IPv4": (
        "http://2130706433:PORT/",
        r"2130706433 \(127\.0\.0\.1\) is not allowed \(loopback\)",
    ),
    "unspecified": ("http://0.0.0.0:PORT/", r"0\.0\.0\.0 is not allowed \(unspecified\)"),
    "cloud metadata": (
        "http://169.254.169.254/latest/meta-data/",
        r"169\.254\.169\.254 is not allowed \(link-local\)",
    ),
    "private": ("http://10.0.0.1/", r"10\.0\.0\.1 is not allowed \(private\)"),
    "multicast": ("http://224.0.0.251/", r"224\.0\.0\.251 is not allowed \(multicast\)"),
}
FIELDS = {"wake.webhook": "webhook", "snapshot.fingerprint.url": "probe"}


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("field", sorted(FIELDS))
def test_an_internal_target_is_a_422_at_intake_naming_the_field(
    settings: Settings, internal: HttpSink, field: str, target: str
) -> None:
    # Given a target an agent should not reach
    url, says = TARGETS[target]
    url = url.replace("PORT", str(internal.server.server_port))
    # When an agent raises a case that would reach it
    with intake(settings) as client:
        response = client.post(
            "/v1/escalations", headers=AGENT, json=request("in-1", **{FIELDS[field]: url})
        )
    # Then it is refused, naming the field, the address and the setting; nothing was reached
    assert response.status_code == 422, response.text
    [problem] = response.json()["errors"]
    assert re.fullmatch(f"{re.escape(field)}: {says}; {SETTING}", problem), problem
    nothing_reached(internal)


def test_a_task_s_wake_webhook_is_judged_the_same_way(
    settings: Settings, internal: HttpSink
) -> None:
    url = f"{internal.url}/wake"
    with intake(settings) as client:
        response = client.post(
            "/v1/tasks/t-1/blockers",
            headers=AGENT,
            json={"escalations": ["no-such-case"], "wake": {"webhook": url}},
        )
    assert response.status_code == 422
    assert response.json()["detail"] == (
        f"wake.webhook: 127.0.0.1 is not allowed (loopback); {SETTING}"
    )


@pytest.mark.parametrize(
    ("allow", "host"),
    [
        ("127.0.0.1:PORT", "127.0.0.1"),
        ("127.0.0.1/32", "127.0.0.1"),
        ("127.0.0.0/8", "127.0.0.1"),
        ("localhost:PORT", "localhost"),
    ],
)
def test_what_the_operator_names_is_let_through(
    settings: Settings, internal: HttpSink, allow: str, host: str
) -> None:
    port = internal.server.server_port
    url = f"http://{host}:{port}/wake"
    # Given a local target that is refused by default
    with intake(settings) as client:
        refused = client.post("/v1/escalations", headers=AGENT, json=request("a-1", webhook=url))
    assert refused.status_code == 422
    # When the operator names it in ESCALATE_OUTBOUND_ALLOW
    allowed = settings.model_copy(update={"outbound_allow": allow.replace("PORT", str(port))})
    with intake(allowed) as client:
        accepted = client.post("/v1/escalations", headers=AGENT, json=request("a-2", webhook=url))
        # Then it is accepted, and the service's own port on that host is still refused
        own = f"http://{host}:{settings.port}/v1/escalations"
        itself = client.post("/v1/escalations", headers=AGENT, json=request("a-3", webhook=own))
    assert accepted.status_code == 201, accepted.text
    assert itself.status_code == 422
    assert "is not allowed" in itself.json()["errors"][0]


def close(service: Harness, case_id: str) -> None:
    service.in_state(case_id, "awaiting", "followed_up")
    runtime = runtime_for(service.app)
    assert answer(runtime, case_id, option="approve", responder="ana", channel="test").decided
    service.in_state(case_id, "closed")


def webhook_row(service: Harness, case_id: str, *states: str) -> Delivery:
    def done(_session: object) -> Delivery | None:
        rows = [d for d in service.deliveries(case_id) if d.purpose == "wake_webhook"]
        return rows[0] if rows and rows[0].state in states else None

    return service.wait(done, what=f"the webhook delivery in {states}")


def test_a_redirect_is_not_followed_by_the_probe_or_the_webhook(
    service: Harness, redirector: ThreadingHTTPServer, internal: HttpSink
) -> None:
    # Given an allowed target that redirects to an internal one
    allowed = f"http://127.0.0.1:{redirector.server_port}"
    body = request("redirect-1", webhook=f"{allowed}/wake", probe=f"{allowed}/state")
    case = accept(runtime_for(service.app), body)
    # When the case is snapshotted, decided and closed
    close(service, case.id)
    row = webhook_row(service, case.id, "failed", "abandoned")
    # Then neither the probe nor the webhook went where the redirect pointed
    nothing_reached(internal)
    snapshot = service.case("run-8842", "redirect-1").snapshot or {}
    assert "HTTP 3xx (redirects are not followed)" in snapshot["probe_error"]
    assert row.last_error == "webhook answered HTTP 3xx (redirects are not followed)"


def test_nothing_a_target_answers_reaches_the_agent(service: Harness, api: TestClient) -> None:
    # Given an allowed target whose body is a short secret-looking value, and a webhook
    # receiver that answers with an unusual status
    service.sink.values["/state"] = "internal-token-7f3a"
    service.sink.script("/wake", *[(418, 0.0)] * 3)
    body = request("text-1", webhook=f"{service.sink.url}/wake", probe=f"{service.sink.url}/state")
    case = accept(runtime_for(service.app), body)
    # When the case closes and the webhook is tried
    close(service, case.id)
    webhook_row(service, case.id, "failed", "abandoned")
    # Then the fingerprint is the body's digest and the webhook outcome its status class
    seen = api.get(f"/v1/escalations/{case.id}", headers=AGENT).json()
    events = api.get(f"/v1/escalations/{case.id}/events", headers=AGENT).json()
    shown = json.dumps([seen, events])
    assert "internal-token" not in shown
    digest = "sha256:" + hashlib.sha256(b"internal-token-7f3a").hexdigest()
    assert seen["snapshot"]["fingerprint"]["value"] == digest
    [webhook] = [d for d in seen["deliveries"] if d["purpose"] == "wake_webhook"]
    assert webhook["last_error"] == "webhook answered HTTP 4xx"


@pytest.fixture
def rebinding(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A resolver whose *.rebind.test names answer a public address once, then loopback
    (DNS rebinding); public addresses are never dialled from a test. Returns what was dialled."""
    real_resolve, real_connect = socket.getaddrinfo, socket.create_connection
    asked: dict[str, int] = {}
    dialled: list[str] = []

    def resolve(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if not name.endswith(".rebind.test"):
            return real_resolve(host, port, *args, **kwargs)
        asked[name] = asked.get(name, 0) + 1
        address = "93.184.216.34" if asked[name] == 1 else "127.0.0.1"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, int(port)))]

    def connect(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        host, port = address[0], address[1]
        for *_, sockaddr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
            dialled.append(f"{host}->{sockaddr[0]}")
            if ipaddress.ip_address(sockaddr[0]).is_global:
                continue  # stands for a public host that does not answer
            return real_connect((sockaddr[0], port), *args, **kwargs)
        raise ConnectionRefusedError(f"{host}: refused")

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    monkeypatch.setattr(socket, "create_connection", connect)
    return dialled


def test_a_name_that_rebinds_to_loopback_after_intake_is_refused_at_connect(
    service: Harness, internal: HttpSink, rebinding: list[str]
) -> None:
    # Given a case whose names resolved to a public address when it was accepted
    port = internal.server.server_port
    body = request(
        "rebind-1",
        webhook=f"http://hook.rebind.test:{port}/wake",
        probe=f"http://probe.rebind.test:{port}/state",
    )
    case = accept(runtime_for(service.app), body)
    # When they resolve to loopback by the time the probe and the webhook connect
    close(service, case.id)
    row = webhook_row(service, case.id, "refused", "sent", "abandoned")
    # Then nothing reached the internal server: the delivery is recorded as refused
    nothing_reached(internal)
    assert not any(hop.endswith("->127.0.0.1") for hop in rebinding if "rebind" in hop)
    assert row.state == "refused"
    assert row.last_error == (
        f"webhook: hook.rebind.test (127.0.0.1) is not allowed (loopback); {SETTING}"
    )
    snapshot = service.case("run-8842", "rebind-1").snapshot or {}
    assert "probe.rebind.test (127.0.0.1) is not allowed (loopback)" in snapshot["probe_error"]
