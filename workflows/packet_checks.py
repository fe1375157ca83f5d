"""The escalation packet's checks and the report `escalate check` prints (SPEC §1)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from workflows.vocabulary import (
    CRITICAL_WAITING,
    REQUIRED_STRINGS,
    EvidenceKind,
    Severity,
    TriggerType,
    WaitingBehavior,
)

# Finds secrets in a JSON-like value: returns findings with .field and .kind. Injected so
# this module stays import-light; every caller that accepts packets passes
# workflows.secrets.find_secrets (None checks the shape only).
SecretFinder = Callable[[object], Sequence[Any]]


@dataclass(frozen=True)
class Problem:
    """One error or warning: the field it is about and what is wrong."""

    field: str
    message: str

    def line(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


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


def _enum_value(packet: Mapping[str, Any], name: str, allowed: type[Any]) -> str | None:
    value = packet.get(name)
    return value if isinstance(value, str) and value in allowed._value2member_map_ else None


def _check_string_list(
    packet: Mapping[str, Any], name: str, errors: list[Problem], *, required: bool
) -> tuple[bool, int]:
    """Checks a list-of-strings field; returns (is a list, count of valid entries)."""
    value = packet.get(name)
    if not isinstance(value, list):
        errors.append(Problem(name, "missing or not a list"))
        return False, 0
    if required and not value:
        errors.append(Problem(name, "empty list"))
    valid = 0
    for entry in value:
        if _is_text(entry):
            valid += 1
        else:
            errors.append(Problem(name, "entry is empty or not a string"))
    return True, valid


def _check_evidence(packet: Mapping[str, Any], errors: list[Problem]) -> tuple[bool, int]:
    """Checks the evidence list; returns (is a non-empty list, count of valid entries)."""
    evidence = packet.get("evidence")
    if not isinstance(evidence, list) or not evidence:
        errors.append(Problem("evidence", "missing, not a list, or empty"))
        return False, 0
    valid = 0
    for entry in evidence:
        if not isinstance(entry, dict):
            errors.append(Problem("evidence", "entry is not an object"))
            continue
        kind = entry.get("kind")
        # One error per entry, its first fault: scripts written against the reference
        # checker count errors (#15.6), so a bad kind hides a blank ref.
        if not (isinstance(kind, str) and kind in EvidenceKind._value2member_map_):
            errors.append(Problem("evidence", f"bad kind {kind!r}"))
        elif not _is_text(entry.get("ref")):
            errors.append(Problem("evidence", "ref is empty"))
        else:
            valid += 1
    return True, valid


def _shown_id(packet: Mapping[str, Any], name: str, secret_fields: set[str]) -> str | None:
    value = packet.get(name)
    return value if _is_text(value) and name not in secret_fields else None


def check_packet(packet: object, *, find_secrets: SecretFinder | None = None) -> CheckResult:
    """Checks a decoded packet against SPEC §1; errors and warnings in the spec's order."""
    if not isinstance(packet, dict):
        return CheckResult(errors=(Problem("", "packet is not a JSON object"),))
    errors: list[Problem] = []
    warnings: list[str] = []
    for name in REQUIRED_STRINGS:
        if not _is_text(packet.get(name)):
            errors.append(Problem(name, "missing or empty"))

    severity = _enum_value(packet, "severity", Severity)
    trigger_type = _enum_value(packet, "trigger_type", TriggerType)
    waiting = _enum_value(packet, "waiting_behavior", WaitingBehavior)
    for name, ok in (
        ("severity", severity),
        ("trigger_type", trigger_type),
        ("waiting_behavior", waiting),
    ):
        if ok is None:
            errors.append(Problem(name, f"bad value {packet.get(name)!r}"))

    _, attempted = _check_string_list(packet, "attempted", errors, required=True)
    _, completed = _check_string_list(packet, "completed", errors, required=False)
    remaining_is_list, remaining = _check_string_list(packet, "remaining", errors, required=False)
    evidence_listed, evidence = _check_evidence(packet, errors)

    if severity == Severity.CRITICAL and waiting not in CRITICAL_WAITING:
        errors.append(Problem("severity critical", "waiting_behavior must be paused or stopped"))
    secret_fields: set[str] = set()
    if find_secrets is not None:
        for finding in find_secrets(packet):
            errors.append(Problem(finding.field, f"contains a secret ({finding.kind})"))
            secret_fields.add(finding.field)

    if remaining_is_list and not packet["remaining"]:
        warnings.append("remaining: empty list, no remaining work stated")
    if severity in (Severity.HIGH, Severity.CRITICAL) and evidence_listed and evidence < 2:
        warnings.append(f"severity {severity}: only {evidence} evidence entry, 2 advised")

    return CheckResult(
        # An id holding a secret is shown as missing: the report never prints a secret.
        packet_id=_shown_id(packet, "packet_id", secret_fields),
        run_id=_shown_id(packet, "run_id", secret_fields),
        severity=severity,
        trigger_type=trigger_type,
        waiting_behavior=waiting,
        attempted=attempted,
        completed=completed,
        remaining=remaining,
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
