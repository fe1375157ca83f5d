"""The design documents' two worked packets, used by `escalate check --make-*` and tests."""

from __future__ import annotations

import copy
from typing import Any

# Incomplete on purpose: no evidence and an empty requested_action (2 errors).
_INCOMPLETE: dict[str, Any] = {
    "packet_id": "esc-2026-10-16-004",
    "run_id": "run-8841",
    "task_summary": "Migrate 120 records and verify totals match source.",
    "severity": "high",
    "trigger_type": "blocked",
    "trigger_detail": "Target totals differ from source by 3 records after two full passes.",
    "attempted": ["Re-ran the migration with a fresh target table."],
    "evidence": [],
    "completed": ["Exported 120 source records.", "Created the target table."],
    "remaining": ["Reconcile the 3 missing records.", "Verify totals match source."],
    "blocked_on": "Three source records have no matching customer in the target system.",
    "requested_action": "",
    "recipient": "data-ops",
    "waiting_behavior": "paused",
    "resume_condition": "A reply naming how to treat the 3 orphan records.",
}

_VALID: dict[str, Any] = {
    "packet_id": "esc-2026-10-16-005",
    "run_id": "run-8842",
    "task_summary": "Migrate 120 records and verify totals match source.",
    "severity": "medium",
    "trigger_type": "uncertain",
    "trigger_detail": "Source has 120 records, target has 117; the 3 missing rows share "
    "customer ids absent from the target system.",
    "attempted": [
        "Re-ran the migration with a fresh target table.",
        "Compared source and target ids; 3 ids have no target customer.",
    ],
    "evidence": [
        {"kind": "log", "ref": "logs/migrate-run-8842.log"},
        {"kind": "artifact", "ref": "artifacts/orphan-ids.csv"},
    ],
    "completed": ["Exported 120 source records.", "Loaded 117 records into the target."],
    "remaining": ["Decide the 3 orphan records.", "Verify totals match source."],
    "blocked_on": "Three source records have no matching customer in the target system.",
    "requested_action": "Skip the 3 orphan records, or create placeholder customers for them?",
    "recipient": "data-ops",
    "waiting_behavior": "read_only",
    "resume_condition": "A reply choosing skip or placeholder.",
}


def incomplete_packet() -> dict[str, Any]:
    """A fresh copy of the incomplete worked example (fails with 2 errors)."""
    return copy.deepcopy(_INCOMPLETE)


def valid_packet() -> dict[str, Any]:
    """A fresh copy of the valid worked example (passes clean)."""
    return copy.deepcopy(_VALID)
