"""docs/INTEGRATIONS.md's copy-paste blocks are the ones the tests run: the tools: rules parse
as a design and stop what they say, the JSON snippets are valid and call our commands."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from tests.workers.conftest import DESIGN
from workflows.design import parse_design
from workflows.tool_rules import match_tool

DOC = Path(__file__).resolve().parents[1] / "docs" / "INTEGRATIONS.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def test_the_documented_tools_rules_stop_what_they_say() -> None:
    # Given the doc's tools: block added to a design
    (tools,) = [block for block in blocks("yaml") if block.startswith("tools:")]
    design = parse_design(
        {**yaml.safe_load(DESIGN.read_text()), **yaml.safe_load(tools)}, source="doc"
    )
    # Then the named dangers escalate and everyday calls are allowed at once
    for tool, tool_input in [
        ("Bash", {"command": "rm -rf build"}),
        ("Bash", {"command": "git push --force origin main"}),
        ("Bash", {"command": "psql -c 'DROP TABLE users'"}),
        ("Write", {"file_path": "/repo/.env", "content": ""}),
        ("mcp__db__query", {"sql": "delete from users"}),
    ]:
        assert match_tool(design.tools, tool, tool_input) is not None, tool_input
    for tool, tool_input in [
        ("Bash", {"command": "git push origin main"}),
        ("Write", {"file_path": "/repo/README.md", "content": ""}),
        ("mcp__db__query", {"sql": "select 1"}),
    ]:
        assert match_tool(design.tools, tool, tool_input) is None, tool_input


def test_the_documented_json_snippets_are_valid_and_call_our_commands() -> None:
    parsed = [json.loads(block) for block in blocks("json") if not block.startswith('{"hookSp')]
    servers = [p for p in parsed if "mcpServers" in p]
    hooks = [p for p in parsed if "hooks" in p]
    assert servers[0]["mcpServers"]["escalate"]["args"] == ["mcp"]
    (entry,) = hooks[0]["hooks"]["PreToolUse"]
    (hook,) = entry["hooks"]
    assert hook["command"].startswith("escalate hook claude --wait 50")
    assert hook["timeout"] > 50
    assert re.fullmatch(entry["matcher"], "mcp__db__query")
