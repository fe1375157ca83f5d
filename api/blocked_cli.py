"""BLOCKED.md on the run's own disk: written by `raise --blocked-file`, removed on the decision."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from api.cli_common import call

if TYPE_CHECKING:
    from pathlib import Path

    from api.client import Escalations


def blocked_path(flag: bool, path: str | None) -> Path | None:
    """The absolute BLOCKED.md path asked for, or None (absolute: the service writes there)."""
    import os
    from pathlib import Path

    if not flag and path is None:
        return None
    return Path(os.path.abspath(path or "BLOCKED.md"))


def _known_packet(flags: dict[str, Any]) -> dict[str, Any]:
    """What BLOCKED.md can say when no packet could be built or read."""
    return {
        "run_id": flags["run"] or "(unknown run)",
        "packet_id": flags["packet_id"] or "(none)",
        "task_summary": flags["summary"] or "",
        "trigger_type": flags["trigger"],
        "trigger_detail": flags["detail"] or "",
        "blocked_on": flags["blocked_on"] or flags["question"] or "",
        "requested_action": flags["question"] or "(no question given)",
        "attempted": flags["attempted"] or [],
    }


def write_blocked(
    path: Path,
    packet: object,
    raw_options: list[dict[str, str]],
    flags: dict[str, Any],
    *,
    escalation_id: str | None = None,
    filing_error: str | None = None,
) -> None:
    """Write BLOCKED.md with what is known; a disk error is reported, the exit stays 2."""
    from workers.unblock import write_atomically
    from workflows.blocked_file import render_blocked
    from workflows.case import parse_options

    try:
        options = parse_options(raw_options or None)
    except ValueError:
        options = ()  # the refusal on stderr and in the file names the problem
    known = _known_packet(flags)
    try:
        text = render_blocked(
            packet if isinstance(packet, dict) else known,
            options,
            escalation_id=escalation_id,
            filing_error=filing_error,
        )
    except (TypeError, AttributeError):  # a packet file of the wrong shape
        text = render_blocked(
            known, options, escalation_id=escalation_id, filing_error=filing_error
        )
    try:
        write_atomically(path, text)
    except OSError as exc:
        typer.echo(f"error: cannot write {path}: {exc}", err=True)
        return
    typer.echo(f"blocked: wrote {path}; the loop stops until it is removed", err=True)


def unblock_locally(client: Escalations, case: dict[str, Any], blocked: Path) -> str | None:
    """Do on this disk what the service does on close: DECISION.md, decisions.log, unblock."""
    from workers.unblock import unblock
    from workflows.blocked_file import (
        decision_log_line,
        plan_path,
        render_decision,
        render_plan_entry,
        unblock_paths,
    )
    from workflows.payloads import UnblockPayload

    history = call(lambda: client.events(case["id"]))
    closes = [e["detail"] for e in history["events"] if e["kind"] == "closed"]
    if not closes:
        return f"case {case['id']} has no close entry; {blocked} left in place"
    close, at = closes[-1], str(case.get("closed_at") or "")
    decision_file, decisions_log = unblock_paths(str(blocked))
    named = (case.get("wake") or {}).get("decision_file")
    payload: UnblockPayload = {
        "escalation_id": case["id"],
        "blocked_file": str(blocked),
        "decision_file": decision_file,
        "decisions_log": decisions_log,
        "decision_md": render_decision(
            close,
            escalation_id=case["id"],
            run_id=str(case.get("run_id")),
            packet_id=str(case.get("packet_id")),
            question=str(case.get("question") or ""),
            closed_at=at,
        ),
        "log_line": decision_log_line(close, escalation_id=case["id"], closed_at=at),
        "plan_file": plan_path(str(blocked)),
        "plan_entry": render_plan_entry(
            close,
            escalation_id=case["id"],
            question=str(case.get("question") or ""),
            closed_at=at,
        ),
    }
    if isinstance(named, str):
        payload["named_file"] = named
    return unblock(payload)


def after_blocked_raise(client: Escalations, escalation_id: str, blocked: Path) -> None:
    """Close the race with a fast decision, and say when the service will not unblock."""
    from api.client import ClientError

    try:
        case = client.get(escalation_id)
    except ClientError:
        return  # the raise worked; the service unblocks on close
    if case.get("state") == "closed":  # decided before BLOCKED.md was on disk
        try:
            note = unblock_locally(client, case, blocked)
        except OSError as exc:
            note = f"cannot unblock {blocked}: {exc}"
        except typer.Exit:  # the events could not be read (said on stderr); still exit 2
            note = f"run `escalate wait {escalation_id} --unblock` to unblock {blocked}"
        if note:
            typer.echo(f"warning: {note}", err=True)
    elif (case.get("wake") or {}).get("blocked_file") != str(blocked):
        typer.echo(
            f"warning: case {escalation_id} was raised earlier without this file, so the service "
            f"will not remove it: run `escalate wait {escalation_id} --unblock "
            f"--blocked-file {blocked}`",
            err=True,
        )
