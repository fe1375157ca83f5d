"""`escalate mcp` driven by the MCP SDK's own client, over stdio against a live `escalate serve`,
and over streamable HTTP: the tools' schemas and answers, a wait that never holds past 45 s,
and a decision taken up by a second MCP process."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import httpx

from tests.api.test_serve import ESCALATE, Server, free_port, wait_for
from tests.api.test_shell_loop import agent_env
from tests.support.processes import stop
from tests.support.waiting import wait_until
from workflows.examples import incomplete_packet, valid_packet

if TYPE_CHECKING:
    from mcp import Client

    Session = Callable[[Client], Awaitable[None]]


def over_stdio(server: Server, session: Session) -> None:
    """Run one MCP session with a fresh `escalate mcp` process, as an agent's client would."""
    # The SDK costs 1.2 s to import: paid by the process that runs these tests, not by
    # every process's collection
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=ESCALATE, args=["mcp"], env=agent_env(server))

    async def run() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            await session(client)

    asyncio.run(run())


async def tool(client: Client, name: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    data: dict[str, Any] = result.structured_content
    return data


def test_an_agent_raises_waits_and_resumes_from_another_process(
    live_patient: Server, run_id: str
) -> None:
    # Given a live service and an agent whose MCP client starts `escalate mcp`
    patient = live_patient
    seen: dict[str, Any] = {}

    async def first(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {
            "raise_escalation",
            "await_decision",
            "get_escalation",
            "check_packet",
            "needs_human",
            "permission_prompt",
        } <= set(tools)
        # The packet's fields are a typed schema, its closed vocabularies enumerated
        schema = json.dumps(tools["raise_escalation"].input_schema)
        assert all(word in schema for word in ("requested_action", "harm_risk", "read_only"))
        assert '"maximum": 45' in json.dumps(tools["await_decision"].input_schema)
        # check_packet gives the §1 report without filing anything
        checked = await tool(client, "check_packet", packet=incomplete_packet())
        assert checked["verdict"] == "FAIL" and len(checked["errors"]) == 2
        assert "FAIL" in checked["report"]
        # A refused packet comes back as a result with every problem, not a protocol error
        short = {"run_id": "run-1", "severity": "high", "trigger_type": "blocked"}
        refused = await tool(client, "raise_escalation", packet=short)
        assert refused["state"] == "refused"
        assert {"evidence", "requested_action", "packet_id"} <= {
            line.split(":")[0] for line in refused["problems"]
        }
        # needs_human answers compose mode from the design
        verdict = await tool(
            client, "needs_human", situation="The next step drops a table.", trigger="harm_risk"
        )
        assert verdict["needs_human"] is True
        # The permission-prompt tool answers in the shape `claude -p` reads from its text
        for tool_input, behavior in [
            ({"command": "ls -la"}, "allow"),
            ({"command": "rm -rf /srv && echo password=hunter2hunter2"}, "deny"),
        ]:
            result = await client.call_tool(
                "permission_prompt",
                {"tool_name": "Bash", "input": tool_input, "tool_use_id": "toolu_1"},
            )
            said = json.loads(result.content[0].text)
            assert said["behavior"] == behavior, said
            if behavior == "allow":
                assert said["updatedInput"] == tool_input
            else:
                assert "secret" in said["message"] and "hunter2" not in said["message"]
        # A good packet is filed: id, state, recipient and how the person answers
        created = await tool(
            client,
            "raise_escalation",
            packet={**valid_packet(), "run_id": run_id, "packet_id": "esc-mcp-1"},
            options=["Skip the 3 records", {"label": "Stop the migration", "value": "stop"}],
        )
        assert created["id"] and created["recipient"] == "data-ops"
        assert "Skip the 3 records" in created["how_to_answer"]
        seen["id"] = created["id"]
        # A short wait answers pending, with what to do next, well inside the client's timeout
        waited = await tool(client, "await_decision", escalation_id=created["id"], hold_seconds=1)
        assert waited["outcome"] == "pending" and "again" in waited["next"]
        # The open case is a resource
        listed = await client.read_resource("escalate://cases/open")
        assert created["id"] in listed.contents[0].text
        one = await client.read_resource(f"escalate://cases/{created['id']}")
        assert json.loads(one.contents[0].text)["outcome"] == "pending"

    over_stdio(patient, first)
    # When a person answers while no MCP process is running
    admin = patient.client()
    wait_for(admin, seen["id"], "awaiting", "followed_up")
    admin.reply(seen["id"], option="Skip the 3 records", sender="ana")

    async def second(client: Client) -> None:
        # Then a new process's await_decision returns the decision and acknowledges it
        waited = await tool(client, "await_decision", escalation_id=seen["id"], hold_seconds=30)
        assert (waited["outcome"], waited["resumes"], waited["acknowledged"]) == (
            "decided",
            True,
            True,
        )
        assert waited["decision"]["decided_by"] == "api:admin"  # the token that answered
        now = await tool(client, "get_escalation", escalation_id=seen["id"])
        assert now["outcome"] == "decided"
        # And the closed case has left the open cases
        listed = await client.read_resource("escalate://cases/open")
        assert seen["id"] not in listed.contents[0].text

    over_stdio(patient, second)
    assert admin.get(seen["id"])["resumed"]["at"] is not None


def test_streamable_http_serves_the_same_tools() -> None:
    from mcp import Client

    # Given `escalate mcp --transport http` (check_packet needs no service)
    port = free_port()
    process = subprocess.Popen(
        [ESCALATE, "mcp", "--transport", "http", "--port", str(port)],
        # A run's environment names its service; check_packet never calls it.
        env={**os.environ, "ESCALATE_URL": "http://127.0.0.1:9", "ESCALATE_TOKEN": "unused"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"

    def listening() -> bool:
        assert process.poll() is None, "escalate mcp exited"
        try:
            httpx.get(url, timeout=1)
        except httpx.HTTPError:
            return False
        return True

    try:
        wait_until(listening, timeout=30, every=0.1, what="escalate mcp to listen")

        async def run() -> dict[str, Any]:
            async with Client(url) as client:
                return await tool(client, "check_packet", packet=valid_packet())

        # When an HTTP client checks a packet, then it gets the §1 verdict
        assert asyncio.run(run())["verdict"] == "PASS"
    finally:
        stop(process, grace=10)
