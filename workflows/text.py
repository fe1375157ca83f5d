"""Text as notifications and pages show it: one line, cut to a stated length."""

from __future__ import annotations


def one_line(text: object, limit: int = 200) -> str:
    """Collapse whitespace to one line and cut it at `limit` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
