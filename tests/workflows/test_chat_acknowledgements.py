"""'ack' / 'on it' typed after a case's code: an acknowledgement, never a decision or a guess."""

from __future__ import annotations

import pytest

from workflows.acknowledgements import AckReading, read_acknowledgement
from workflows.case import Option

OPTIONS = [Option("approve", "approve"), Option("deny", "deny", resumes=False)]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("ack", ""),
        ("ACK!", ""),
        ("acked", ""),
        ("on it", ""),
        ("On it.", ""),
        ("I'm on it", ""),
        ("i’m on it now", ""),
        ("on it, checking the totals", "checking the totals"),
        ("ack - looking at the ids", "looking at the ids"),
        ("ack: rerunning the diff", "rerunning the diff"),
    ],
)
def test_ack_and_on_it_record_who_is_on_it(text: str, reason: str) -> None:
    assert read_acknowledgement(text, OPTIONS) == AckReading(reason)


@pytest.mark.parametrize(
    "text",
    ["approve", "ack approve", "on it?", "is anyone on it", "ok", "acknowledged the risk", "back"],
)
def test_anything_else_is_left_to_the_judge(text: str) -> None:
    assert read_acknowledgement(text, OPTIONS) is None


@pytest.mark.parametrize("label", ["acknowledge", "ack", "on it"])
def test_an_option_spelt_like_an_ack_is_answered_not_acknowledged(label: str) -> None:
    # The delivery-failure case offers "acknowledge": "<code> ack" answers it, as before
    assert read_acknowledgement("ack", [Option(label, label), *OPTIONS]) is None
