"""Reply grammar v2's words: the §6 commands and their spellings, how a reply becomes words."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from itertools import pairwise

from workflows.case import Option

COMMANDS = (
    "RESET_EXECUTION",
    "RESET_PHASE",
    "RESET_REVIEWER",
    "PROCEED",
    "STOP",
    "NUCLEAR_RESET",
    "SKIP",
)
EXPLICIT_ONLY = frozenset({"SKIP", "NUCLEAR_RESET"})  # never by typo, SKIP only alone
ALWAYS_DESTRUCTIVE = frozenset({"NUCLEAR_RESET"})
ALIASES = {
    "restart phase": "RESET_PHASE",
    "restart the phase": "RESET_PHASE",
    "reset the phase": "RESET_PHASE",
    "reset the execution": "RESET_EXECUTION",
    "reset executor": "RESET_EXECUTION",
    "reset the executor": "RESET_EXECUTION",
    "reset exec": "RESET_EXECUTION",
    "reset the reviewer": "RESET_REVIEWER",
    "reset review": "RESET_REVIEWER",
    "reset the review": "RESET_REVIEWER",
    # lullabeast's dashboard buttons, typed as the operator reads them there
    "revert to planner": "RESET_PHASE",
    "revert to executor": "RESET_EXECUTION",
    "revert to reviewer": "RESET_REVIEWER",
    "continue": "PROCEED",
    "go ahead": "PROCEED",
    "carry on": "PROCEED",
    "halt": "STOP",
    "abort": "STOP",
}
# Words that name some recovery without saying which: a clarification, never a default.
BARE_VERBS = frozenset({"reset", "restart", "retry", "rerun", "redo", "resume", "nuclear", "nuke"})


def _word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


QUESTION_MARKS = "?¿؟⸮"  # after NFKC, which folds the full-width "？" into "?"
QUESTION_WORDS = _word_set(
    "what why how when where who which whose should shall can could would will is are am "
    "was were do does did may might isnt arent doesnt didnt shouldnt couldnt wouldnt"
)
NEGATORS = _word_set(
    "dont not never no nope nah cannot cant wont shouldnt mustnt neednt didnt doesnt"
)
NEGATION_LEADS = frozenset({("do", "not"), ("please", "dont"), ("lets", "not"), ("better", "not")})
# After the action, words that take it back, hedge it or make it conditional.
_HEDGES = NEGATORS | _word_set("wait actually nevermind but unless instead if maybe perhaps")
_NOT_GERUNDS = _word_set("everything nothing anything something during morning evening")
_HEDGE_PHRASES = (("scratch", "that"), ("hold", "on"), ("hold", "off"), ("just", "kidding"))
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'", "`": "'", "´": "'"})
_EDGE_PUNCTUATION = " \t\r\n.,;:!?¡¿\"'`()[]{}"


def tokenize(text: str) -> tuple[str, ...]:
    """Words only: case, emoji, punctuation (any script) and _/-/space differences vanish."""
    folded = unicodedata.normalize("NFKC", text).translate(_APOSTROPHES).casefold()
    return tuple(re.findall(r"[^\W_]+", folded.replace("'", "")))


def words_of(text: str) -> str:
    """The words joined by single spaces: the form labels, values and commands compare in."""
    return " ".join(tokenize(text))


def _spellings() -> dict[tuple[str, ...], tuple[str, str]]:
    table: dict[tuple[str, ...], tuple[str, str]] = {}
    for command in COMMANDS:
        words = tuple(command.lower().split("_"))
        table[words] = table[("".join(words),)] = (command, "command")  # RESET_PHASE, resetphase
    for alias, command in ALIASES.items():
        table[tuple(alias.split())] = (command, "alias")
    return table


# Every way to type a command: its words, the words run together, or an alias.
SPELLINGS = _spellings()


def match_option_name(options: Sequence[Option], name: str) -> Option | None:
    """An option named exactly by label or value (case-insensitive), as buttons send it."""

    def normal(text: str) -> str:
        text = unicodedata.normalize("NFKC", text).translate(_APOSTROPHES)
        return " ".join(text.strip(_EDGE_PUNCTUATION).casefold().split())

    wanted = normal(name)
    for option in options:
        if wanted and wanted in (normal(option.label), normal(option.value)):
            return option
    return None


def is_hedged(words: tuple[str, ...]) -> bool:
    """Whether the words after an action take it back, hedge it or make it conditional."""
    pairs = set(pairwise(words))
    return any(w in _HEDGES for w in words) or any(p in pairs for p in _HEDGE_PHRASES)


def is_gerund(word: str) -> bool:
    """Whether the word after a command names something else to act on ("stop waiting")."""
    return len(word) > 4 and word.endswith("ing") and word not in _NOT_GERUNDS


def strip_quoted(text: str) -> str:
    """The reply without the quoted message under it (">" lines) or its signature ("-- ")."""
    kept = []
    for line in text.splitlines():
        if line.rstrip() == "--":
            break
        if not line.lstrip().startswith(">"):
            kept.append(line)
    return "\n".join(kept)
