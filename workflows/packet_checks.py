"""The escalation packet's checks and the report `escalate check` prints (SPEC §1)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from workflows.packet_schema import ENUMS, Problem, problems_of
from workflows.vocabulary import CRITICAL_WAITING, Severity

# Finds secrets in a JSON-like value: returns findings with .field and .kind. Injected so
# this module stays import-light; every caller that accepts packets passes
# workflows.secrets.find_secrets (None checks the shape only).
SecretFinder = Callable[[object], Sequence[Any]]


@dataclass(frozen=True)
class CheckResult:
    """Everything the checker found about one packet."""

    packet_id: str | None = None
    run_id: str | None = None
    severity: str | None = None
    trigger_type: str | None = None
    waiting_behavior: str | None = None
    attempted: int = 0
    completed: int = 0
    remaining: int = 0
    evidence_entries: int = 0
    errors: tuple[Problem, ...] = ()
    warnings: tuple[str, ...] = field(default=())

    @property
    def passed(self) -> bool:
        return not self.errors

    @property
    def verdict(self) -> str:
        return "PASS" if self.passed else "FAIL"

    def error_lines(self) -> list[str]:
        return [problem.line() for problem in self.errors]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["errors"] = self.error_lines()
        data["warnings"] = list(self.warnings)
        data["verdict"] = self.verdict
        return data


def _is_text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _valid_entries(packet: Mapping[str, Any], name: str, faults: list[Problem]) -> int:
    """How many entries of a list field passed: 0 when the field itself is wrong."""
    if any(fault.field == name and fault.entry is None for fault in faults):
        return 0
    bad = {fault.entry for fault in faults if fault.field == name}
    return len(packet[name]) - len(bad)


def _shown_id(packet: Mapping[str, Any], name: str, secret_fields: set[str]) -> str | None:
    value = packet.get(name)
    return value if _is_text(value) and name not in secret_fields else None


def check_packet(packet: object, *, find_secrets: SecretFinder | None = None) -> CheckResult:
    """Checks a decoded packet against SPEC §1; errors and warnings in the spec's order."""
    faults = problems_of(packet)
    errors = list(faults)
    if not isinstance(packet, dict):
        return CheckResult(errors=tuple(errors))
    wrong = {fault.field for fault in faults}
    severity, trigger_type, waiting = (
        None if name in wrong else str(packet[name]) for name in ENUMS
    )
    if severity == Severity.CRITICAL and waiting not in CRITICAL_WAITING:
        errors.append(Problem("severity critical", "waiting_behavior must be paused or stopped"))
    secret_fields: set[str] = set()
    if find_secrets is not None:
        for finding in find_secrets(packet):
            errors.append(Problem(finding.field, f"contains a secret ({finding.kind})"))
            secret_fields.add(finding.field)

    warnings: list[str] = []
    evidence = _valid_entries(packet, "evidence", faults)
    if isinstance(packet.get("remaining"), list) and not packet["remaining"]:
        warnings.append("remaining: empty list, no remaining work stated")
    evidence_listed = isinstance(packet.get("evidence"), list) and bool(packet["evidence"])
    if severity in (Severity.HIGH, Severity.CRITICAL) and evidence_listed and evidence < 2:
        warnings.append(f"severity {severity}: only {evidence} evidence entry, 2 advised")

    return CheckResult(
        # An id holding a secret is shown as missing: the report never prints a secret.
        packet_id=_shown_id(packet, "packet_id", secret_fields),
        run_id=_shown_id(packet, "run_id", secret_fields),
        severity=severity,
        trigger_type=trigger_type,
        waiting_behavior=waiting,
        attempted=_valid_entries(packet, "attempted", faults),
        completed=_valid_entries(packet, "completed", faults),
        remaining=_valid_entries(packet, "remaining", faults),
        evidence_entries=evidence,
        errors=tuple(errors),
        warnings=tuple(warnings),
    )


def render_report(result: CheckResult) -> str:
    """The report, line for line as the reference checker prints it (SPEC §1)."""

    def shown(value: str | None) -> str:
        return value if value is not None else "-"

    lines = [
        f"packet_id: {shown(result.packet_id)}",
        f"run_id: {shown(result.run_id)}",
        f"severity: {shown(result.severity)}",
        f"trigger_type: {shown(result.trigger_type)}",
        f"waiting_behavior: {shown(result.waiting_behavior)}",
        f"attempted: {result.attempted}",
        f"completed: {result.completed}",
        f"remaining: {result.remaining}",
        f"evidence_entries: {result.evidence_entries}",
        f"errors: {len(result.errors)}",
        *(f"  error: {line}" for line in result.error_lines()),
        f"warnings: {len(result.warnings)}",
        *(f"  warning: {text}" for text in result.warnings),
        f"verdict: {result.verdict}",
    ]
    return "\n".join(lines) + "\n"


def render_json(result: CheckResult) -> str:
    """The same result as one JSON object (`escalate check --json`)."""
    return json.dumps(result.to_dict(), indent=2) + "\n"
