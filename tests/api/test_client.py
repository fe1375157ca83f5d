"""The Python client against a live `escalate serve`: long-poll wait and @require_approval."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx
import pytest

from api.client import AsyncEscalations, Denied, Escalations, require_approval
from tests.api.test_serve import Server
from tests.support.waiting import wait_until
from workflows.examples import valid_packet


def answer_when_notified(server: Server, run_id: str, packet_id: str, option: str) -> None:
    """An operator in another thread: answers as soon as the notification arrives."""

    def operator() -> None:
        server.notified(packet_id)
        client = server.client()
        [case] = [c for c in client.list(run=run_id) if c["packet_id"] == packet_id]
        wait_until(
            lambda: client.reply(case["id"], option=option)["outcome"],
            lambda outcome: outcome != "too_early",
            timeout=10,
            what=f"{packet_id} to take an answer",
        )

    threading.Thread(target=operator, daemon=True).start()


def test_wait_long_polls_until_decided_and_returns_none_on_timeout(
    live_patient: Server, run_id: str
) -> None:
    server = live_patient  # windows of minutes: the answer never races the default
    client = server.client()
    created = client.raise_({**valid_packet(), "run_id": run_id, "packet_id": "esc-client-1"})
    assert client.wait(created["id"], timeout=0.3) is None  # undecided yet: a clean None
    answer_when_notified(server, run_id, "esc-client-1", "approve")
    case = client.wait(created["id"], timeout=20)
    assert case is not None and case["decision"]["option"] == "approve"
    # The server bounds a hold at 45 s, under the 60 s MCP clients give a tool call
    too_long = httpx.get(
        f"{server.url}/v1/escalations/{created['id']}/wait",
        params={"hold": 46},
        headers=client._http.headers,
    )
    assert too_long.status_code == 422


def test_require_approval_runs_the_function_only_when_approved(
    live_patient: Server, run_id: str
) -> None:
    server = live_patient  # windows of minutes: the answer never races the default
    client = server.client()
    ran: list[str] = []

    def packet_for(table: str) -> dict[str, Any]:
        return {
            **valid_packet(),
            "run_id": run_id,
            "packet_id": f"esc-drop-{table}",
            "blocked_on": f"Dropping table {table} needs approval.",
        }

    @require_approval(client, packet_for, timeout=20)
    def drop(table: str) -> str:
        ran.append(table)
        return f"dropped {table}"

    answer_when_notified(server, run_id, "esc-drop-orders", "approve")
    assert drop("orders") == "dropped orders"
    [orders] = [c for c in client.list(run=run_id) if c["packet_id"] == "esc-drop-orders"]
    assert client.get(orders["id"])["resumed"]["via"] == "ack"  # the wait acknowledged it
    answer_when_notified(server, run_id, "esc-drop-users", "deny")
    with pytest.raises(Denied, match="chose 'deny'"):
        drop("users")
    assert ran == ["orders"]


def test_the_async_client_waits_without_blocking_the_loop(
    live_patient: Server, run_id: str
) -> None:
    server = live_patient  # windows of minutes: the answer never races the default
    token = server.client()._http.headers["Authorization"].removeprefix("Bearer ")

    async def scenario() -> dict[str, Any] | None:
        client = AsyncEscalations(server.url, token)
        created = await client.raise_(
            {**valid_packet(), "run_id": run_id, "packet_id": "esc-async-1"}
        )
        answer_when_notified(server, run_id, "esc-async-1", "approve")
        ticks = 0

        async def heartbeat() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.05)

        beat = asyncio.create_task(heartbeat())
        case = await client.wait(created["id"], timeout=20)
        beat.cancel()
        await client.aclose()
        assert ticks > 3  # the loop kept running while the wait held
        return case

    case = asyncio.run(scenario())
    assert case is not None and case["outcome"] == "decided"
    # Returning the decision acknowledged the wake: the service knows the run resumed
    assert server.client().get(case["id"])["resumed"]["via"] == "ack"


def test_both_clients_raise_a_pipeline_from_its_state_folder(
    live: Server, tmp_path: Any, run_id: str
) -> None:
    server = live
    token = server.client()._http.headers["Authorization"].removeprefix("Bearer ")
    for name, resets in (("sync", 0), ("async", 3)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "phase_state.json").write_text(
            f'{{"phase": 1, "escalation_resets": {resets}, "pipeline_id": "{run_id}-{name}"}}'
        )
    made = Escalations(server.url, token).raise_pipeline(str(tmp_path / "sync"))

    async def raise_async() -> dict[str, Any]:
        client = AsyncEscalations(server.url, token)
        try:
            return await client.raise_pipeline(str(tmp_path / "async"), severity="critical")
        finally:
            await client.aclose()

    made_async = asyncio.run(raise_async())
    assert made["pipeline_id"] == f"{run_id}-sync" and "RESET_PHASE" in made["offered"]
    assert made_async["offered"] == ["PROCEED", "STOP", "NUCLEAR_RESET"]
    assert server.client().get(made_async["id"])["severity"] == "critical"
