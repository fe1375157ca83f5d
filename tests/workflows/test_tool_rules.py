"""The design's `tools:` rules: which tool calls escalate, and what a bad rule is told."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from workflows.design import Design, parse_design
from workflows.errors import DesignError
from workflows.tool_rules import match_tool

DESIGN = Path(__file__).resolve().parents[1] / "support" / "design-test.yaml"

TOOLS = {
    "Bash": [
        {"pattern": r"\brm\s+-[a-z]*r[a-z]*f|\brm\s+-[a-z]*f[a-z]*r"},
        {"pattern": r"\bgit\s+push\b.*(--force\b|\s-f\b)"},
        {"pattern": r"(?i)\bdrop\s+table\b", "severity": "critical"},
    ],
    "Write|Edit": [{"pattern": r"(^|/)\.env$"}],
    "mcp__db__.*": [{"pattern": r"(?i)\bdelete\b", "field": "sql", "trigger": "harm_risk"}],
}


def design_with(tools: Any) -> Design:
    data = yaml.safe_load(DESIGN.read_text())
    return parse_design({**data, "tools": tools}, source="design-test.yaml")


@pytest.mark.parametrize(
    ("tool", "tool_input", "severity"),
    [
        ("Bash", {"command": "rm -rf build/"}, "high"),
        ("Bash", {"command": "cd x && rm -fr /"}, "high"),
        ("Bash", {"command": "git push --force origin main"}, "high"),
        ("Bash", {"command": "git push -f"}, "high"),
        ("Bash", {"command": "psql -c 'drop table users'"}, "critical"),
        ("Write", {"file_path": "/repo/.env", "content": "X=1"}, "high"),
        ("Edit", {"file_path": "/repo/.env", "old_string": "a", "new_string": "b"}, "high"),
        ("mcp__db__query", {"sql": "DELETE FROM users"}, "high"),
    ],
)
def test_a_risky_call_matches_its_rule(
    tool: str, tool_input: dict[str, Any], severity: str
) -> None:
    # Given the design's tools rules, when a risky call is matched
    found = match_tool(design_with(TOOLS).tools, tool, tool_input)
    # Then it escalates as harm_risk at the rule's severity, naming what it would run
    assert found is not None
    assert (found.rule.trigger.value, found.rule.severity.value) == ("harm_risk", severity)
    assert found.text in found.detail()


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("Bash", {"command": "ls -la"}),
        ("Bash", {"command": "git push origin main"}),
        ("Bash", {"command": "rm build.log"}),
        ("Write", {"file_path": "/repo/env.md", "content": "rm -rf"}),
        ("Read", {"file_path": "/repo/.env"}),
        ("mcp__db__query", {"sql": "SELECT 1"}),
        ("mcp__dbx__query", {"sql": "DELETE FROM x"}),
    ],
)
def test_everything_else_is_allowed_at_once(tool: str, tool_input: dict[str, Any]) -> None:
    assert match_tool(design_with(TOOLS).tools, tool, tool_input) is None


def test_a_rule_without_field_reads_the_whole_input_of_an_unknown_tool() -> None:
    design = design_with({"mcp__.*": [{"pattern": "prod"}]})
    found = match_tool(design.tools, "mcp__k8s__apply", {"cluster": "prod", "dry_run": False})
    assert found is not None and found.field == "tool_input"


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ({"Bash": [{"pattern": "rm -rf ("}]}, "tools.Bash[0].pattern: 'rm -rf (' is not a regular"),
        ({"Bash": [{"pattern": "x", "trigger": "cost_risk"}]}, "not among the design's triggers"),
        ({"Bash": [{"pattern": "x", "severity": "huge"}]}, "tools.Bash[0].severity: 'huge' is not"),
        ({"Bash": [{"pattern": "x", "patern": "y"}]}, "patern"),
        ({"Bash(": [{"pattern": "x"}]}, "does not compile"),
    ],
)
def test_a_bad_rule_is_refused_with_its_place(tools: Any, message: str) -> None:
    with pytest.raises(DesignError) as refused:
        design_with(tools)
    assert message in str(refused.value)


def test_a_design_without_tools_keeps_its_hash() -> None:
    data = yaml.safe_load(DESIGN.read_text())
    plain = parse_design(data, source="d")
    assert plain.content_hash == parse_design({**data, "tools": {}}, source="d").content_hash
    assert plain.content_hash != design_with(TOOLS).content_hash
