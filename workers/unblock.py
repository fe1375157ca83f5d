"""Files the service writes on the run's disk: a shell loop's DECISION.md, decisions.log and
BLOCKED.md (SPEC §5), and a pipeline's command file (SPEC §6).

With ESCALATE_FILES_ROOT set (`roots`), every one is reached through workers/local_files.py,
which follows no link under the root: a folder swapped for a link is an error, not a detour.
"""

from __future__ import annotations

import fcntl
import json
from collections.abc import Sequence
from pathlib import Path

from workers.local_files import open_for_append, read_bytes, remove, write_atomically
from workflows.blocked_file import is_logged, names_case, with_plan_entry
from workflows.payloads import CommandRecord, RequestFilePayload, UnblockPayload

__all__ = ["unblock", "write_atomically", "write_command_file"]


def write_command_file(path: Path, record: CommandRecord, *, roots: Sequence[Path] = ()) -> None:
    """The orchestrator's command (SPEC §6), whole or not at all, then its sentinel
    `<stem>.done` (lullabeast's escalation_output.done): a poller that sees the sentinel
    finds the whole command already there."""
    write_atomically(path, json.dumps(record, indent=2, sort_keys=True) + "\n", roots=roots)
    write_atomically(sentinel_of(path), "", roots=roots)


def sentinel_of(path: Path) -> Path:
    """escalation_output.json -> escalation_output.done; cmd -> cmd.done."""
    return (
        path.with_suffix(".done") if path.suffix == ".json" else path.with_name(path.name + ".done")
    )


def _append_once(path: Path, line: str, escalation_id: str, roots: Sequence[Path]) -> None:
    """Append the case's line unless the log has it; the lock keeps two writers to one line."""
    with open_for_append(path, roots) as log:
        fcntl.flock(log, fcntl.LOCK_EX)
        log.seek(0)
        text = log.read()
        if not is_logged(text, escalation_id):
            log.write(("\n" if text and not text.endswith("\n") else "") + line + "\n")


def _append_entry(path: Path, entry: str, escalation_id: str, roots: Sequence[Path]) -> None:
    """Append the case's decision under the file's Decisions heading, once."""
    with open_for_append(path, roots) as plan:
        fcntl.flock(plan, fcntl.LOCK_EX)
        plan.seek(0)
        addition = with_plan_entry(plan.read(), entry, escalation_id)
        if addition is not None:
            plan.write(addition)


def _exists(path: Path, roots: Sequence[Path]) -> bool:
    try:
        read_bytes(path, roots)
    except FileNotFoundError:
        return False
    return True


def _tell_the_next_iteration(
    payload: UnblockPayload, escalation_id: str, roots: Sequence[Path]
) -> None:
    """The decision where the loop's prompt reads it: IMPLEMENTATION_PLAN.md when the repo
    has one, and the file named by --decision-file (made when missing)."""
    entry = payload.get("plan_entry")
    if not isinstance(entry, str):
        return
    plan = payload.get("plan_file")
    if isinstance(plan, str) and _exists(Path(plan), roots):
        _append_entry(Path(plan), entry, escalation_id, roots)
    named = payload.get("named_file")
    if isinstance(named, str) and named:
        _append_entry(Path(named), entry, escalation_id, roots)


def unblock(payload: UnblockPayload, roots: Sequence[Path] = ()) -> str | None:
    """Write DECISION.md (and the plan's Decisions entry), log once, remove the case's
    BLOCKED.md; None, or why it stayed."""
    escalation_id = str(payload["escalation_id"])
    blocked = Path(payload["blocked_file"])
    try:
        current: str | None = read_bytes(blocked, roots).decode("utf-8")
    except FileNotFoundError:
        current = None
    except UnicodeDecodeError:
        current = ""
    ours = current is None or names_case(current, escalation_id)
    # Order matters: removing BLOCKED.md is the unblock signal, so the decision is on disk first.
    if ours:
        write_atomically(Path(payload["decision_file"]), str(payload["decision_md"]), roots=roots)
        _tell_the_next_iteration(payload, escalation_id, roots)
    _append_once(Path(payload["decisions_log"]), str(payload["log_line"]), escalation_id, roots)
    if not ours:
        return f"{blocked} is not this case's BLOCKED.md; left it and DECISION.md in place"
    remove(blocked, roots)
    return None


def settle_request_file(
    path: Path, payload: RequestFilePayload, roots: Sequence[Path] = ()
) -> str | None:
    """Bring a JobClaw request file in line with its closed case, under the lock `escalate
    request parse` takes, replaced whole; None, or why the file was left as it was."""
    import os
    from datetime import datetime

    from workflows.errors import RequestInvalid
    from workflows.request_parsing import parse_request
    from workflows.requests import settle_from_case

    for _ in range(10):
        if not _exists(path, roots):
            return f"{path} is gone; nothing to settle"
        with open_for_append(path, roots) as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            # A writer replaces the file whole: a lock on the old one guards nothing.
            if os.fstat(handle.fileno()).st_ino != os.stat(path).st_ino:
                continue
            try:
                request = parse_request(json.loads(read_bytes(path, roots)))
            except (RequestInvalid, ValueError) as exc:
                return f"{path} is not a request file this service can read: {exc}"
            now = datetime.fromisoformat(str(payload["closed_at"]))
            settled = settle_from_case(request, payload, now=now)
            if settled is not None:
                text = json.dumps(settled.to_dict(), indent=2, ensure_ascii=False) + "\n"
                write_atomically(path, text, roots=roots)
            return None
    return f"{path} kept changing; left as it was"
