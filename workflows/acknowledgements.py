"""An operator's acknowledgement of an open case: "I have it", with a reason, on the timeline.

An acknowledgement decides nothing: it records who is on the case and stops the reminders
and next-tier pages (a chain's levels too, when the chain stops on `ack`); the timeout
default still applies at the deadline, and a `hold` tier keeps waiting for that person.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from workflows.case import Option
from workflows.chains import stops_on_ack
from workflows.design import Tier
from workflows.errors import Conflict, InvalidInput
from workflows.reply_vocabulary import tokenize
from workflows.stage_results import EventSpec, Purpose
from workflows.states import OPEN_FOR_DECISION, State
from workflows.text import one_line

REASON_LIMIT = 300


def acknowledgement(case_id: str, state: State, *, by: str, reason: str) -> EventSpec:
    """The event that records who took the case and why; only an open, routed case."""
    if state not in OPEN_FOR_DECISION:
        raise Conflict(f"escalation {case_id} is {state}: only an open case is acknowledged")
    said = one_line(reason, REASON_LIMIT)
    if not said:
        raise InvalidInput("reason: say why (e.g. 'looking at the totals now')")
    return EventSpec("acknowledged", {"by": by, "reason": said})


# "ack" / "on it" and their close variants, as tokenize() spells them (apostrophes dropped).
ACK_PHRASES = frozenset(
    {
        ("ack",),
        ("acked",),
        ("ackd",),
        ("acking",),
        ("on", "it"),
        ("im", "on", "it"),
        ("i", "am", "on", "it"),
        ("on", "it", "now"),
        ("im", "on", "it", "now"),
    }
)
_SEPARATORS = (",", ":", ";", " - ", " — ", " – ", ".", "!")


@dataclass(frozen=True)
class AckReading:
    """A chat line read as an acknowledgement, with what the person added after it."""

    reason: str


def read_acknowledgement(text: str, options: Sequence[Option]) -> AckReading | None:
    """'ack', 'on it' (and close variants), alone or followed by a separator and a reason.

    None when the line is anything else, or when one of the case's options is itself spelt
    like an acknowledgement ("acknowledge" starts like "ack"): then the words answer that
    option and the judge reads them, so an acknowledgement is never a decision, nor a guess.
    """
    if any(_spelt_like_ack(name) for o in options for name in (o.label, o.value)):
        return None
    said = text.strip()
    if "?" in said:  # "on it?" asks; it takes nothing
        return None
    if tokenize(said) in ACK_PHRASES:
        return AckReading("")
    for separator in _SEPARATORS:
        head, found, rest = said.partition(separator)
        if found and tokenize(head) in ACK_PHRASES:
            return AckReading(one_line(rest, REASON_LIMIT))
    return None


def _spelt_like_ack(name: str) -> bool:
    words = " ".join(tokenize(name))
    return any(words.startswith(" ".join(phrase)) for phrase in ACK_PHRASES)


def stopped_by_ack(tier: Tier) -> frozenset[Purpose]:
    """The pages still waiting that an acknowledgement cancels: reminders, and the chain's
    levels when the chain stops on an ack (the first notice is never taken back)."""
    stopped = {Purpose.FOLLOW_UP}
    if stops_on_ack(tier.chain):
        stopped.add(Purpose.CHAIN)
    return frozenset(stopped)
