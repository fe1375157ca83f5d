"""`escalate mcp`: serve the MCP tools over stdio (for a local agent) or streamable HTTP."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer


class Transport(StrEnum):
    STDIO = "stdio"
    HTTP = "http"


def mcp(
    transport: Annotated[Transport, typer.Option(help="stdio, or streamable HTTP at /mcp.")] = (
        Transport.STDIO
    ),
    host: Annotated[str, typer.Option(help="HTTP: the address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP: the port to listen on.")] = 8765,
    design: Annotated[
        Path | None,
        typer.Option(help="Design for needs_human and tools rules (default: ESCALATE_DESIGN)."),
    ] = None,
    prompt_wait: Annotated[
        float,
        typer.Option(min=0, max=3600, help="permission_prompt: seconds to wait for the person."),
    ] = 45.0,
) -> None:
    """Serve raise_escalation, await_decision, get_escalation, check_packet, needs_human and
    permission_prompt, and the open cases as resources, with ESCALATE_URL/ESCALATE_TOKEN."""
    import logging

    from api.cli_common import make_client
    from api.mcp_server import build_server

    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per service call otherwise
    client = make_client()
    server = build_server(client=client, design=design, prompt_wait=prompt_wait)
    try:
        if transport is Transport.STDIO:
            server.run("stdio")
        else:
            server.run("streamable-http", host=host, port=port)
    finally:
        client.close()
