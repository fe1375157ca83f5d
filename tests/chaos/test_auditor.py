"""The auditor's verdicts on figures alone: each promise it checks can be found broken."""

from __future__ import annotations

import pytest

from tests.chaos.auditor import Audit


def test_a_clean_run_breaks_no_promise() -> None:
    assert Audit(fault="none", cases=3, closed=3, duplicate_wakes=0).problems() == []


@pytest.mark.parametrize(
    ("wakes", "redeliveries", "allowance", "broken"),
    [
        (1, 0, 0, True),  # a run woken twice with no cause
        (1, 1, 0, False),  # its acknowledgement was late: the wake was sent again
        (2, 0, 2, False),  # two kills between a wake's send and its record
        (3, 1, 1, True),  # more than both explain
    ],
)
def test_a_run_woken_again_needs_a_late_acknowledgement_or_a_fault(
    wakes: int, redeliveries: int, allowance: int, broken: bool
) -> None:
    audit = Audit(
        fault="f",
        duplicate_wakes=wakes,
        wake_redeliveries=redeliveries,
        duplicate_allowance=allowance,
    )
    assert any(p.startswith("duplicate wakes") for p in audit.problems()) is broken


def test_a_default_without_its_follow_up_is_a_broken_promise() -> None:
    audit = Audit(fault="f", defaults_without_follow_up=["case-1"])
    assert audit.problems() == ["defaults_without_follow_up: ['case-1']"]
    assert audit.ids_in_question() == ["case-1"]


def test_a_seeded_secret_found_anywhere_is_a_broken_promise() -> None:
    assert Audit(fault="f", secret_found_in=["logs"]).problems() == ["secret_found_in: ['logs']"]
