"""Files the service writes on the run's disk: a shell loop's DECISION.md, decisions.log and
BLOCKED.md (SPEC §5), and a pipeline's command file (SPEC §6)."""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workflows.blocked_file import is_logged, names_case


def write_atomically(path: Path, text: str) -> None:
    """Readers see the old file or the new one, never half of it."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_command_file(path: Path, record: Mapping[str, Any]) -> None:
    """The orchestrator's command (SPEC §6), whole or not at all."""
    write_atomically(path, json.dumps(record, indent=2, sort_keys=True) + "\n")


def _append_once(path: Path, line: str, escalation_id: str) -> None:
    """Append the case's line unless the log has it; the lock keeps two writers to one line."""
    with path.open("a+", encoding="utf-8") as log:
        fcntl.flock(log, fcntl.LOCK_EX)
        log.seek(0)
        text = log.read()
        if not is_logged(text, escalation_id):
            log.write(("\n" if text and not text.endswith("\n") else "") + line + "\n")


def unblock(payload: Mapping[str, Any]) -> str | None:
    """Write DECISION.md, log once, remove the case's BLOCKED.md; None, or why it stayed."""
    escalation_id = str(payload["escalation_id"])
    blocked = Path(payload["blocked_file"])
    try:
        current = blocked.read_text(encoding="utf-8")
    except FileNotFoundError:
        current = None
    except UnicodeDecodeError:
        current = ""
    ours = current is None or names_case(current, escalation_id)
    # Order matters: removing BLOCKED.md is the unblock signal, so the decision is on disk first.
    if ours:
        write_atomically(Path(payload["decision_file"]), str(payload["decision_md"]))
    _append_once(Path(payload["decisions_log"]), str(payload["log_line"]), escalation_id)
    if not ours:
        return f"{blocked} is not this case's BLOCKED.md; left it and DECISION.md in place"
    blocked.unlink(missing_ok=True)
    return None
