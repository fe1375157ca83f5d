"""A task's one set of blockers (SPEC §8): extended as they come, woken once, in kandev's words."""

from __future__ import annotations

import pytest

from workflows.blockers import (
    WAKE_REASON,
    Blocker,
    SetChange,
    blocker_set_key,
    extend_set,
    ready_to_wake,
    wake_payload,
)

CLOSE = {"option": "github", "decided_by": "ana", "outcome": "decided", "resumes": True}


@pytest.mark.parametrize(
    ("open_set", "requested", "woken", "change"),
    [
        # The first blocker starts the set
        ([], ["e1"], set(), SetChange(("e1",), ("e1",), ())),
        # One more joins it, in the order added (kandev adds them one at a time)
        (["e1"], ["e2"], set(), SetChange(("e1", "e2"), ("e2",), ())),
        # Adding one that is already in the set changes nothing
        (["e1", "e2"], ["e1"], set(), SetChange(("e1", "e2"), (), ())),
        (["e1"], ["e1", "e2", "e2"], set(), SetChange(("e1", "e2"), ("e2",), ())),
        # One whose decision already woke the task is not added again
        ([], ["e1"], {"e1"}, SetChange((), (), ("e1",))),
        ([], ["e1", "e3"], {"e1"}, SetChange(("e3",), ("e3",), ("e1",))),
        (["e3"], ["e1"], {"e1"}, SetChange(("e3",), (), ("e1",))),
    ],
)
def test_given_blockers_added_then_the_open_set_is_extended(
    open_set: list[str], requested: list[str], woken: set[str], change: SetChange
) -> None:
    assert extend_set(open_set, requested, woken=woken) == change


def test_the_set_key_changes_when_a_blocker_joins_and_ignores_order() -> None:
    assert blocker_set_key(["e1", "e2"]) == blocker_set_key(["e2", "e1"])
    assert blocker_set_key(["e1"]) != blocker_set_key(["e1", "e2"])


def test_given_one_open_blocker_then_the_set_is_not_ready() -> None:
    done = Blocker("e1", "Which providers?", "closed", CLOSE, "decided")
    waiting = Blocker("e2", "Which scopes?", "awaiting")
    assert not ready_to_wake([done, waiting])
    assert ready_to_wake([done])
    assert not ready_to_wake([])
    # A refused or parked blocker never resolves: it needs a person, not a wake-up
    assert not ready_to_wake([done, Blocker("e3", "?", "refused")])
    assert not ready_to_wake([done, Blocker("e4", "?", "dead_letter")])


def test_the_wake_payload_speaks_kandevs_words_with_every_title_and_decision() -> None:
    # Given a set of two resolved blockers, in the order they were added
    first = Blocker("e1", "Which OAuth providers should we support?", "closed", CLOSE, "decided")
    default = {"option": "skip", "decided_by": None, "outcome": "defaulted", "is_default": True}
    second = Blocker("e2", "Which scopes do we ask for?", "closed", default, "defaulted")
    # When the task is woken / Then the reason is kandev's, and every title and close is there
    assert wake_payload("KAN-42", [first, second]) == {
        "reason": "task_blockers_resolved",
        "task_id": "KAN-42",
        "resolved_blocker_ids": ["e1", "e2"],
        "blockers": [
            {
                "escalation_id": "e1",
                "title": "Decision needed: Which OAuth providers should we support?",
                "outcome": "decided",
                "decision": CLOSE,
            },
            {
                "escalation_id": "e2",
                "title": "Decision needed: Which scopes do we ask for?",
                "outcome": "defaulted",
                "decision": default,
            },
        ],
    }
    assert WAKE_REASON == "task_blockers_resolved"
