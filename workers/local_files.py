"""Which paths on this host the service may read and write for a run (ESCALATE_FILES_ROOT)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# Wake fields that name a file the service writes on its own disk.
WRITTEN_FILES = ("blocked_file", "fallback_file", "command_file")


def outside_roots(path: str, roots: Sequence[Path]) -> bool:
    """True when `roots` are set and `path`, links resolved, lies under none of them."""
    if not roots:
        return False
    real = Path(os.path.realpath(path))
    return not any(real.is_relative_to(root) for root in roots)


def refused_paths(fields: Mapping[str, Any], roots: Sequence[Path], *, prefix: str) -> list[str]:
    """A problem for each named file outside the allowed folders."""
    where = ":".join(str(root) for root in roots)
    return [
        f"{prefix}{key}: {value} is outside ESCALATE_FILES_ROOT ({where})"
        for key, value in fields.items()
        if isinstance(value, str) and value and outside_roots(value, roots)
    ]
