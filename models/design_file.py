"""Loading a design file: YAML with duplicate keys refused, problems with line and column."""

from __future__ import annotations

import os
from collections.abc import Hashable
from typing import Any

import yaml

from workflows.design import Design, parse_design
from workflows.errors import DesignError


class _DuplicateKey(yaml.MarkedYAMLError):
    """A key written twice in one mapping."""


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys, where the later one would silently win."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[object] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # "<<: *anchor" may legitimately be overridden
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, Hashable) and key in seen:
                raise _DuplicateKey(
                    problem=f"duplicate key {key!r} (write each key once)",
                    problem_mark=key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_design_yaml(source: str) -> object:
    """The data in the YAML file at `source`; raise DesignError naming the file and the problem."""
    try:
        with open(source, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise DesignError(source, ["cannot read: no such file"]) from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise DesignError(source, [f"cannot read: {reason}"]) from None
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass: safe
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        kind = "" if isinstance(exc, _DuplicateKey) else "YAML syntax error: "
        raise DesignError(source, [f"{where}{kind}{exc.problem}"]) from None
    except yaml.YAMLError as exc:
        raise DesignError(source, [f"YAML syntax error: {exc}"]) from None
    return data


def load_design(path: str | os.PathLike[str]) -> Design:
    """Read and check a design file; raise DesignError naming the file and each problem."""
    source = os.fspath(path)
    return parse_design(read_design_yaml(source), source=source)
