"""The design's `tools:` rules: which of an agent's tool calls need a person first (pure)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from workflows.design_errors import rule_error
from workflows.design_fields import Text, TriggerName
from workflows.vocabulary import Severity, TriggerType

# The tool_input field a rule reads when it names none: what a person would call "the command".
DEFAULT_FIELDS: Mapping[str, str] = {
    "Bash": "command",
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
    "WebFetch": "url",
}


class ToolRule(BaseModel):
    """One pattern for one tool: a call whose field matches it escalates as `trigger`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pattern: Text
    field: Text | None = None  # a key of tool_input; default: DEFAULT_FIELDS, else all of it
    trigger: TriggerName = TriggerType.HARM_RISK
    severity: Severity = Severity.HIGH

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise rule_error(f"{pattern!r} is not a regular expression: {exc}") from None
        return pattern


def check_tool_name(name: str) -> str:
    """A `tools:` key is a tool name or a regular expression over names (as Claude's matcher)."""
    try:
        re.compile(name)
    except re.error as exc:
        raise rule_error(f"tool name pattern {name!r} does not compile: {exc}") from None
    return name


@dataclass(frozen=True)
class ToolMatch:
    """Why a call needs a person: the rule, the field it read and that field's text."""

    tool: str
    rule: ToolRule
    field: str
    text: str

    def detail(self) -> str:
        """The trigger detail a packet carries: which tool, what it would do, which rule."""
        return (
            f"{self.tool} wants to run {self.field}={self.text!r}; "
            f"it matches the design's tools rule {self.rule.pattern!r}"
        )


def _text_of(rule: ToolRule, tool: str, tool_input: Mapping[str, Any]) -> tuple[str, str]:
    name = rule.field or DEFAULT_FIELDS.get(tool)
    if name is None or name not in tool_input:
        return "tool_input", json.dumps(dict(tool_input), sort_keys=True, ensure_ascii=False)
    value = tool_input[name]
    return name, value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def match_tool(
    rules: Mapping[str, tuple[ToolRule, ...]], tool: str, tool_input: Mapping[str, Any]
) -> ToolMatch | None:
    """The first rule whose tool name and pattern match this call; None: allowed at once."""
    for name, tool_rules in rules.items():
        if name != tool and not re.fullmatch(name, tool):
            continue
        for rule in tool_rules:
            field, text = _text_of(rule, tool, tool_input)
            if re.search(rule.pattern, text):
                return ToolMatch(tool, rule, field, text)
    return None
