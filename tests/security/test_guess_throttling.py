"""Guess throttling that cannot be sidestepped and does not lock out people (issue #14, item 8).

The reply-code miss limit is keyed on what the server knows (a bridge's token holder, the
peer address, a proxy's X-Forwarded-For only when that proxy is configured as trusted),
never on the channel or sender a caller types; its memory is bounded; and one caller's
guessing never blocks another caller's valid reply.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from api.app import create_app
from api.serve import commands
from models.settings import Settings
from tests.security.cases import open_case
from tests.security.embedded import embedded_settings
from workers.inbound.dispatch import MAX_MISSES_PER_MINUTE, MissLimiter

REPO = Path(__file__).resolve().parents[2]
AGENT = {"Authorization": "Bearer agent-t"}
GUESS = "ZZZZZZZZZZ"  # code-shaped, belongs to no case
PROXY = "10.9.9.9"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return embedded_settings(
        tmp_path,
        api_tokens="agent:agent-t,operator:op-guesser:mallory,operator:op-bridge:chatops",
        trusted_proxies=PROXY,
    )


@pytest.fixture
def app(settings: Settings) -> FastAPI:
    return create_app(settings)


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app, client=("10.0.0.66", 4000)) as started:
        yield started


def peer(app: FastAPI, address: str) -> TestClient:
    return TestClient(app, client=(address, 4001))


def bridge(client: TestClient, token: str, text: str, n: int) -> int:
    # A guesser rotates the channel and sender it reports, every time.
    body = {"text": text, "channel": f"chan{n}", "sender": f"U{n}"}
    headers = {"Authorization": f"Bearer {token}"}
    return client.post("/v1/inbound/text", headers=headers, json=body).status_code


def test_rotating_the_reported_sender_does_not_lift_the_limit(client: TestClient) -> None:
    # Given a bridge token guessing codes, naming a new channel and sender each time
    statuses = [bridge(client, "op-guesser", f"{GUESS} approve", n) for n in range(40)]
    # Then after the limit every further guess is refused with 429
    assert statuses[:MAX_MISSES_PER_MINUTE] == [404] * MAX_MISSES_PER_MINUTE
    assert set(statuses[MAX_MISSES_PER_MINUTE:]) == {429}


def test_one_callers_guessing_does_not_block_anothers_valid_reply(
    client: TestClient, settings: Settings
) -> None:
    # Given a guesser that typed the real operator's channel and sender while missing
    _, code = open_case(client, settings)
    body = {"text": f"{GUESS} approve", "channel": "slack", "sender": "U1"}
    guesser = {"Authorization": "Bearer op-guesser"}
    for _ in range(MAX_MISSES_PER_MINUTE + 2):
        client.post("/v1/inbound/text", headers=guesser, json=body)
    assert client.post("/v1/inbound/text", headers=guesser, json=body).status_code == 429
    # When the real bridge relays U1's valid reply
    real = {"text": f"{code} approve", "channel": "slack", "sender": "U1"}
    answered = client.post(
        "/v1/inbound/text", headers={"Authorization": "Bearer op-bridge"}, json=real
    )
    # Then it decides
    assert answered.status_code == 200, answered.text


def test_a_phone_is_not_locked_out_by_a_guesser_elsewhere(
    app: FastAPI, client: TestClient, settings: Settings
) -> None:
    # Given a guesser at one address pressing forged ntfy buttons, X-Forwarded-For rotating
    _, code = open_case(client, settings)
    statuses = [
        client.post(
            "/v1/inbound/ntfy",
            content=f"{GUESS} approve".encode(),
            headers={"X-Forwarded-For": f"203.0.113.{n}"},
        ).status_code
        for n in range(30)
    ]
    # Then the header (from a peer that is no trusted proxy) does not lift the limit
    assert set(statuses[MAX_MISSES_PER_MINUTE:]) == {429}
    # And the operator's phone at another address still decides with its valid code
    phone = peer(app, "10.0.0.7")
    assert phone.post("/v1/inbound/ntfy", content=f"{code} approve".encode()).status_code == 200


def test_a_trusted_proxy_names_the_caller(app: FastAPI, client: TestClient) -> None:
    # Given the configured reverse proxy, forwarding a guesser at 198.51.100.1
    proxy = peer(app, PROXY)

    def via_proxy(forwarded: str) -> int:
        return proxy.post(
            "/v1/inbound/ntfy",
            content=f"{GUESS} approve".encode(),
            headers={"X-Forwarded-For": forwarded},
        ).status_code

    guesses = [via_proxy("6.6.6.6, 198.51.100.1") for _ in range(MAX_MISSES_PER_MINUTE + 3)]
    # Then that caller is throttled (a spoofed first hop changes nothing) ...
    assert guesses[-1] == 429
    assert via_proxy("7.7.7.7, 198.51.100.1") == 429
    # ... and another caller behind the same proxy is not
    assert via_proxy("198.51.100.2") == 404


def test_the_limiter_forgets_the_oldest_callers_first() -> None:
    # Given a limiter bounded to 100 callers; When 10,000 rotating keys each miss once
    limiter = MissLimiter(max_keys=100)
    limiter.miss("kept")
    for n in range(10_000):
        limiter.miss(f"rotating-{n}")
        if n % 50 == 0:
            limiter.miss("kept")
    # Then memory stays bounded, and a caller still missing is still remembered
    assert len(limiter) <= 100
    for _ in range(MAX_MISSES_PER_MINUTE):
        limiter.miss("kept")
    assert limiter.blocked("kept")


def test_the_served_api_reads_the_peer_address_itself(settings: Settings) -> None:
    # uvicorn trusts X-Forwarded-For from 127.0.0.1 by default: the service turns that off
    # and reads forwarded addresses only from ESCALATE_TRUSTED_PROXIES.
    assert "--no-proxy-headers" in commands(settings)["api"]
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "--no-proxy-headers" in dockerfile
    assert "--no-proxy-headers" in (REPO / "docker-compose.yml").read_text()
