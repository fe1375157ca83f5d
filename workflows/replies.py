"""Turning a reply into a decision, or into a comment: never into a guess (SPEC §7)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from workflows.case import Option

GRAMMAR_VERSION = "1"
FUZZY_CUTOFF = 0.8
_NEGATION = re.compile(r"^(?:don'?t|do not|not|never|no,? don'?t|please don'?t)\b", re.I)
_EDGE_PUNCTUATION = " \t\r\n.,;:!?¡¿\"'`()[]{}"


@dataclass(frozen=True)
class ReplyMatch:
    """How a reply was understood: a decision for one option, ambiguous, or a comment."""

    kind: str  # decision, ambiguous, comment
    option: Option | None = None
    matched_by: str | None = None  # option, exact, prefix, fuzzy

    @property
    def decides(self) -> bool:
        return self.kind == "decision"


def _normal(text: str) -> str:
    return " ".join(text.strip(_EDGE_PUNCTUATION).lower().split())


def match_option_name(options: Sequence[Option], name: str) -> Option | None:
    """An option named exactly by label or value (case-insensitive), as buttons send it."""
    wanted = _normal(name)
    for option in options:
        if wanted in (_normal(option.label), _normal(option.value)):
            return option
    return None


def match_reply(options: Sequence[Option], text: str) -> ReplyMatch:
    """Match free text to one option: exact, then prefix, then fuzzy; otherwise a comment."""
    reply = _normal(text)
    # A question back ("approve?") asks, it does not decide: judge the raw text's ending.
    if not reply or _NEGATION.match(reply) or text.strip().endswith("?"):
        return ReplyMatch("comment")
    exact = match_option_name(options, reply)
    if exact is not None:
        return ReplyMatch("decision", exact, "exact")
    # "approve, go ahead" starts with a label; "appr" is the start of one label.
    starts = [o for o in options if re.match(rf"{re.escape(_normal(o.label))}\b", reply)]
    if not starts:
        starts = [o for o in options if len(reply) >= 2 and _normal(o.label).startswith(reply)]
    else:  # "skip all now" names "skip all", not "skip": the longest label that fits wins
        longest = max(len(_normal(o.label)) for o in starts)
        starts = [o for o in starts if len(_normal(o.label)) == longest]
    if len(starts) == 1:
        return ReplyMatch("decision", starts[0], "prefix")
    if len(starts) > 1:
        return ReplyMatch("ambiguous")
    first_word = reply.split(" ", 1)[0]
    labels = {_normal(o.label): o for o in options}
    close = difflib.get_close_matches(first_word, list(labels), n=2, cutoff=FUZZY_CUTOFF)
    if len(close) == 1:
        return ReplyMatch("decision", labels[close[0]], "fuzzy")
    return ReplyMatch("ambiguous" if close else "comment")
