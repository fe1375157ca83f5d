"""Pipeline profile (SPEC §6): the recovery commands the caps allow, the advisory, the packet."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from workflows.case import Option
from workflows.pipeline_state import ABSENT, LISTED, MALFORMED, REQUIRED_FILE, PipelineState
from workflows.text import one_line

RESETS = ("RESET_EXECUTION", "RESET_PHASE", "RESET_REVIEWER")
NUCLEAR = "NUCLEAR_RESET"
RESET_CAP = 3  # per phase, shared by the three resets
NUCLEAR_CAP = 2
NUCLEAR_WARNING = (
    "Last resort — the same failure can recur if the underlying problem isn't addressed."
)
ADVISORY_LIMIT = 200
PACKET_ID_LIMIT = 200
# The button each command has on lullabeast's dashboard, so the phone and the screen agree.
LABELS = {
    "RESET_EXECUTION": "Reset Execution",
    "RESET_PHASE": "Reset Phase",
    "RESET_REVIEWER": "Revert to Reviewer",
    "PROCEED": "Proceed",
    "STOP": "Stop",
    NUCLEAR: "Nuclear Reset",
    "SKIP": "Skip",
}
_WHAT = {
    "RESET_EXECUTION": "Plan fine, executor failed: re-run the executor on a clean tree.",
    "RESET_PHASE": "Plan flawed: start the phase over.",
    "RESET_REVIEWER": "Output fine, reviewer wrong: re-run the review.",
    "PROCEED": "Advance to the next phase anyway.",
    "STOP": "Halt the pipeline.",
    NUCLEAR: f"Wipe and re-plan. {NUCLEAR_WARNING}",  # whole in one line of 120
    "SKIP": "Skip this phase (typed by the operator; never offered).",
}
DESCRIPTIONS = {command: f"({LABELS[command]}) {what}" for command, what in _WHAT.items()}
# What each failing part calls for when the caps allow it.
FIRST_CHOICE = {
    "executor": "RESET_EXECUTION",
    "planner": "RESET_PHASE",
    "reviewer": "RESET_REVIEWER",
}


@dataclass(frozen=True)
class Counters:
    """Resets used in one phase of one pipeline."""

    resets: int = 0
    nuclear: int = 0

    def merged(self, other: Counters) -> Counters:
        """The higher of each: a stale file never lowers what the service has seen."""
        return Counters(max(self.resets, other.resets), max(self.nuclear, other.nuclear))

    def to_json(self) -> dict[str, int]:
        return {"resets": self.resets, "nuclear": self.nuclear}


@dataclass(frozen=True)
class Offer:
    """The commands shown, the commands that execute, and what the operator is told."""

    offered: tuple[str, ...]
    accepted: tuple[str, ...]  # offered, plus SKIP and RESTART PHASE when typed
    cap_reached: bool
    note: str


def offer(counters: Counters) -> Offer:
    """SPEC §6: three resets per phase, then PROCEED/STOP, and NUCLEAR_RESET under its cap."""
    if counters.resets < RESET_CAP:
        offered: tuple[str, ...] = (*RESETS, "PROCEED", "STOP")
        left = RESET_CAP - counters.resets
        note = f"{left} of {RESET_CAP} resets left in this phase."
        return Offer(offered, (*offered, "SKIP"), False, note)
    offered = ("PROCEED", "STOP")
    note = (
        f"Reset cap reached ({counters.resets} of {RESET_CAP} used): only PROCEED and STOP execute"
    )
    if counters.nuclear < NUCLEAR_CAP:
        offered = (*offered, NUCLEAR)
        left = NUCLEAR_CAP - counters.nuclear
        note += f", or NUCLEAR_RESET as a last resort ({left} of {NUCLEAR_CAP} left)"
    return Offer(offered, offered, True, note + ".")


def command_option(command: str) -> Option:
    """The answer a command stands for: STOP halts, NUCLEAR_RESET needs CONFIRM."""
    return Option(
        label=command,
        value=command,
        description=DESCRIPTIONS[command],
        resumes=command != "STOP",
        destructive=command == NUCLEAR,
    )


def charge(counters: Counters, command: str) -> Counters | None:
    """Counters after running `command`; None when its cap is spent."""
    if command in RESETS:
        if counters.resets >= RESET_CAP:
            return None
        return Counters(counters.resets + 1, counters.nuclear)
    if command == NUCLEAR:
        if counters.resets < RESET_CAP or counters.nuclear >= NUCLEAR_CAP:
            return None
        return Counters(counters.resets, counters.nuclear + 1)
    if command == "SKIP" and counters.resets >= RESET_CAP:
        return None  # past the cap only PROCEED and STOP (and a nuclear reset) execute
    return counters


def executable(counters: Counters, offered: Sequence[str]) -> list[str]:
    """Of the commands a case offered, those its phase's counters still allow now."""
    return [command for command in offered if charge(counters, command) is not None]


def _where(state: PipelineState) -> str:
    raw = f" [{state.raw_id}]" if state.raw_id else ""
    title = f" ({state.phase_title})" if state.phase_title else ""
    return f"phase {state.phase}{raw}{title}"


def _named(names: Sequence[str]) -> str:
    shown = ", ".join(names[:LISTED])
    return shown + (f" and {len(names) - LISTED} more" if len(names) > LISTED else "")


def diagnostics(state: PipelineState) -> list[str]:
    """What the state files say beyond the headline, one line each, for the notification."""
    lines = []
    phase = f"{state.phase}" + (f" [{state.raw_id}]" if state.raw_id else "")
    if state.phase_title:
        phase += f" — {state.phase_title}"
    if state.category:
        phase += f" (category: {state.category})"
    lines.append(f"Phase: {phase}")
    if state.exit_criteria:
        lines.append(f"Exit criteria: {state.exit_criteria}")
    attempt = f" (attempt {state.attempt})" if state.attempt else ""
    lines.append(f"Failed: {state.component or 'not known'}{attempt} — {state.trigger_reason}")
    if state.gate_errors:
        lines.append("Gate error codes: " + _named(state.gate_errors))
    lines += [f"Agent failure_reason, {reason}" for reason in state.failure_reasons]
    if state.blocking_issues:
        lines.append("Reviewer blocking issues: " + _named(state.blocking_issues))
    if state.tests_written or state.tests_passing is not None:
        passing = {True: "passing", False: "NOT passing", None: "passing not reported"}
        written = (
            f"{len(state.tests_written)} written ({_named(state.tests_written)})"
            if state.tests_written
            else "none listed as written"
        )
        lines.append(f"Tests: {written}; {passing[state.tests_passing]}")
    if state.manifest or state.on_disk:
        on_disk = set(state.on_disk)
        missing = [name for name in state.manifest if name not in on_disk]
        lines.append(
            f"Files: {len(state.manifest)} in file_manifest, {len(state.on_disk)} on disk"
            + (
                f"; in the manifest but not on disk: {_named(missing)}"
                if missing and state.on_disk
                else ""
            )
        )
    return lines


def recommend(state: PipelineState, chosen: Offer) -> str:
    """One offered command and why: the failing part's reset while the cap allows it."""
    if chosen.cap_reached:
        return (
            f"STOP: {RESET_CAP} resets did not clear {_where(state)}. Fix the cause first; "
            + ("then NUCLEAR_RESET is the last resort." if NUCLEAR in chosen.offered else "")
        ).strip()
    command = FIRST_CHOICE.get(state.component or "")
    if command is None:
        return "STOP: which part failed is not known; read the evidence, then choose a reset."
    return f"{command}: {DESCRIPTIONS[command]}"


def advisory(state: PipelineState, chosen: Offer) -> dict[str, str]:
    """The dashboard advisory (SPEC §4): summary and recommended_action, ≤ 200 characters each."""
    failed = f"{state.component} failed" if state.component else "stopped"
    detail = state.failure or (state.gate_errors[0] if state.gate_errors else "")
    summary = f"Pipeline {state.pipeline_id} {_where(state)} {failed}: {state.trigger_reason}"
    if detail:
        summary += f" — {detail}"
    return {
        "summary": one_line(summary, ADVISORY_LIMIT),
        "recommended_action": one_line(recommend(state, chosen), ADVISORY_LIMIT),
    }


def redacted(state: PipelineState, scan: Callable[[str], list[str]]) -> PipelineState:
    """The state with every text from the run's files that holds a secret withheld (SPEC §9)."""

    def clean(text: str) -> str:
        kinds = scan(text)
        return f"[withheld: contains a secret ({', '.join(kinds)})]" if kinds else text

    return replace(
        state,
        pipeline_id=clean(state.pipeline_id),
        phase=clean(state.phase),
        phase_title=clean(state.phase_title),
        component=clean(state.component) if state.component else None,
        trigger_reason=clean(state.trigger_reason),
        failure=clean(state.failure),
        gate_errors=tuple(clean(e) for e in state.gate_errors),
        completed=tuple(clean(c) for c in state.completed),
        raw_id=clean(state.raw_id),
        category=clean(state.category),
        exit_criteria=clean(state.exit_criteria),
        attempt=clean(state.attempt),
        failure_reasons=tuple(clean(r) for r in state.failure_reasons),
        blocking_issues=tuple(clean(b) for b in state.blocking_issues),
        tests_written=tuple(clean(t) for t in state.tests_written),
        manifest=tuple(clean(m) for m in state.manifest),
        on_disk=tuple(clean(d) for d in state.on_disk),
    )


def packet_id(pipeline_id: str, phase: str, number: int) -> str:
    """Unique per escalation of a phase; long ids are shortened with a hash, never just cut,
    so two escalations can never share one."""
    readable = f"{pipeline_id}:phase-{phase}:escalation-{number}"
    if len(readable) <= PACKET_ID_LIMIT:
        return readable
    digest = hashlib.sha256(f"{pipeline_id}\x1f{phase}".encode()).hexdigest()[:16]
    return f"{one_line(pipeline_id, 60)}~{digest}:escalation-{number}"


def escalation_request(
    state: PipelineState,
    counters: Counters,
    chosen: Offer,
    *,
    state_dir: str,
    number: int,
    severity: str,
    recipient: str,
    wake: Mapping[str, Any],
) -> dict[str, Any]:
    """The intake request `{packet, options, wake}` for one (redacted) pipeline escalation."""
    where = _where(state)
    part = state.component or "a component"
    facts = [f"{state.trigger_reason}."]
    if state.failure:
        facts.append(f"{part.capitalize()} failure: {state.failure}.")
    if state.gate_errors:
        facts.append("Gate errors: " + "; ".join(state.gate_errors[:5]) + ".")
    facts += [f"Agent {reason}." for reason in state.failure_reasons if state.failure not in reason]
    facts.append(
        f"Resets used in this phase: {counters.resets} of {RESET_CAP}; "
        f"nuclear resets: {counters.nuclear} of {NUCLEAR_CAP}."
    )
    attempted = [
        f"{name} retried {count} time{'s' if count > 1 else ''}"
        for name, count in state.retries.items()
    ]
    if counters.resets:
        attempted.append(f"{counters.resets} escalation reset(s) in this phase")
    evidence = [
        {"kind": "artifact", "ref": f"{state_dir}/{name}"}
        for name, reading in state.files.items()
        if reading.status not in (ABSENT, MALFORMED)
    ]
    evidence += [
        {"kind": "log", "ref": f"{state_dir}/{name}: malformed ({reading.error})"}
        for name, reading in state.files.items()
        if reading.status == MALFORMED
    ]
    evidence += [{"kind": "test", "ref": f"gate: {e}"} for e in state.gate_errors[:3]]
    question = "Choose how the pipeline recovers"
    if chosen.cap_reached:
        question = f"Reset cap reached for {where}; choose how the pipeline goes on"
    packet = {
        "packet_id": packet_id(state.pipeline_id, state.phase, number),
        "run_id": one_line(state.pipeline_id, 200),
        "task_summary": one_line(f"Pipeline {state.pipeline_id}, {where}.", 400),
        "severity": severity,
        "trigger_type": "blocked",
        "trigger_detail": one_line(" ".join(facts), 1000),
        "attempted": attempted or ["the pipeline's own retry loop (no retry counters recorded)"],
        "evidence": evidence or [{"kind": "artifact", "ref": f"{state_dir}/{REQUIRED_FILE}"}],
        "completed": list(state.completed),
        "remaining": [f"Finish {where}"],
        "blocked_on": one_line(
            f"{where[0].upper()}{where[1:]}: {part} failed — {state.trigger_reason}", 300
        ),
        "requested_action": f"{question}: {' | '.join(chosen.offered)}. {chosen.note}",
        "recipient": recipient,
        "waiting_behavior": "paused",
        "resume_condition": "A recorded command: one of " + ", ".join(chosen.offered) + ".",
        "phase": one_line(
            f"{state.phase}"
            + (f" [{state.raw_id}]" if state.raw_id else "")
            + (f" — {state.phase_title}" if state.phase_title else ""),
            200,
        ),
        "component": part,
    }
    return {
        "packet": packet,
        "options": [
            {
                "label": c,
                "value": c,
                "description": DESCRIPTIONS[c],
                "resumes": c != "STOP",
                "destructive": c == NUCLEAR,
            }
            for c in chosen.offered
        ],
        "wake": dict(wake),
        # The recheck before the orchestrator acts: did the pipeline's state move meanwhile?
        "snapshot": {
            "verified": f"{REQUIRED_FILE} read when the escalation was raised",
            "fingerprint": {
                "kind": "file",
                "path": f"{state_dir}/{REQUIRED_FILE}",
                # The bytes the offer was made from, not a second read that may be newer.
                **(
                    {"value": read.digest}
                    if (read := state.files.get(REQUIRED_FILE)) and read.digest
                    else {}
                ),
            },
        },
    }


def command_record(
    escalation_id: str, pipeline: Mapping[str, Any], close: Mapping[str, Any], *, closed_at: str
) -> dict[str, Any]:
    """What the orchestrator reads to act: the command and who chose it (SPEC §6); lullabeast
    reads `command` (and writes `source` and `timestamp` itself when its dashboard decides)."""
    return {
        "command": close.get("value"),
        "source": "escalate",
        "timestamp": closed_at,
        "escalation_id": escalation_id,
        "pipeline_id": pipeline.get("pipeline_id"),
        "phase": pipeline.get("phase"),
        "decided_by": close.get("decided_by"),
        "channel": close.get("channel"),
        "is_default": close.get("is_default", False),
        "outcome": close.get("outcome"),
        "recheck": close.get("recheck"),
        "reasons": list(close.get("reasons") or []),  # workflows/reasons.py
        "closed_at": closed_at,
    }
