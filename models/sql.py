"""Constant IN lists for statements built once.

`column.in_(values)` binds the list as one expanding parameter: SQLAlchemy re-renders the
statement's text at every run (about 90 µs of CPU each, measured on a send's record), and
PostgreSQL's generic plan for a prepared statement cannot see the values, so it cannot use
a partial index whose predicate names them. Our lists are enum values fixed in code, so
they are written into the SQL once instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import Enum
from typing import Any

from sqlalchemy import literal_column

_PLAIN = re.compile(r"[a-z0-9_:]+")


def _quoted(values: Iterable[str | Enum]) -> list[str]:
    texts = sorted({str(getattr(value, "value", value)) for value in values})
    for value in texts:
        if not _PLAIN.fullmatch(value):  # written into SQL: only our own plain names
            raise ValueError(f"not a plain constant for SQL: {value!r}")
    return [f"'{value}'" for value in texts]


def _literals(values: Iterable[str | Enum]) -> list[Any]:
    return [literal_column(value) for value in _quoted(values)]


def one_of_text(column: str, values: Iterable[str | Enum]) -> str:
    """`column IN ('a', 'b')` as SQL text, in the order `one_of` writes it: a partial index's
    predicate, which a statement's own must match."""
    return f"{column} IN ({', '.join(_quoted(values))})"


def none_of_text(column: str, values: Iterable[str | Enum]) -> str:
    """`column NOT IN ('a', 'b')` as SQL text, in the order `none_of` writes it."""
    return f"{column} NOT IN ({', '.join(_quoted(values))})"


def one_of(column: Any, values: Iterable[str | Enum]) -> Any:
    """`column IN ('a', 'b')`, the values written into the statement."""
    return column.in_(_literals(values))


def none_of(column: Any, values: Iterable[str | Enum]) -> Any:
    """`column NOT IN ('a', 'b')`, the values written into the statement."""
    return column.not_in(_literals(values))
