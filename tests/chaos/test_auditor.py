"""The auditor's verdicts on figures alone: each promise it checks can be found broken."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.chaos.auditor import Audit, unexplained_wakes


def test_a_clean_run_breaks_no_promise() -> None:
    assert Audit(fault="none", cases=3, closed=3, duplicate_wakes=0).problems() == []


@pytest.mark.parametrize(("unexplained", "allowance", "broken"), [(1, 0, True), (2, 2, False)])
def test_a_run_woken_again_needs_a_late_acknowledgement_or_a_fault(
    unexplained: int, allowance: int, broken: bool
) -> None:
    # (repeats sent again for a late acknowledgement are not counted as unexplained)
    audit = Audit(fault="f", unexplained_wakes=unexplained, duplicate_allowance=allowance)
    assert any(p.startswith("duplicate wakes") for p in audit.problems()) is broken


def test_a_wake_repeated_is_explained_by_its_own_cases_redeliveries_only() -> None:
    wakes = Counter({"a": 3, "b": 2, "c": 1})  # woken three, two and one times
    assert unexplained_wakes(wakes, {"a": 2, "b": 0, "c": 0}) == 1  # b's repeat
    assert unexplained_wakes(wakes, {"a": 5, "b": 0}) == 1  # a's spare ones do not cover b
    assert unexplained_wakes(wakes, {"a": 2, "b": 1}) == 0


def test_a_default_without_its_follow_up_is_a_broken_promise() -> None:
    audit = Audit(fault="f", defaults_without_follow_up=["case-1"])
    assert audit.problems() == ["defaults_without_follow_up: ['case-1']"]
    assert audit.ids_in_question() == ["case-1"]


def test_a_seeded_secret_found_anywhere_is_a_broken_promise() -> None:
    assert Audit(fault="f", secret_found_in=["logs"]).problems() == ["secret_found_in: ['logs']"]
