"""How reply grammar v2 reads one reply: the one action it names, or why it names none."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from workflows.case import Option
from workflows.reply_vocabulary import (
    BARE_VERBS,
    EXPLICIT_ONLY,
    NEGATION_LEADS,
    NEGATORS,
    QUESTION_MARKS,
    QUESTION_WORDS,
    SPELLINGS,
    is_gerund,
    is_hedged,
    match_option_name,
    tokenize,
    words_of,
)

FUZZY_CUTOFF = 0.8  # options: one slip in a short word still decides
COMMAND_FUZZY_CUTOFF = 0.85  # commands: "about" (0.8) must never read as "abort"
PREFIX_CONFIDENCE = 0.9  # a label typed in full then more words; a partial label scales it down


@dataclass(frozen=True)
class Action:
    """What a reply asks for: an option, a §6 command, or a bare verb that names neither."""

    key: str  # what is asked for: "command:STOP", "option:use backup", "bare:reset"
    option: Option | None = None
    command: str | None = None


@dataclass(frozen=True)
class _Phrase:
    words: tuple[str, ...]
    action: Action
    source: str  # option, command, alias, bare


@dataclass(frozen=True)
class _Mention:
    start: int
    end: int
    phrase: _Phrase
    negated: bool


@dataclass(frozen=True)
class Reading:
    """How one reply reads: an action, how and how surely it matched, or why it did not."""

    kind: str  # action, confirm, ambiguous, comment
    action: Action | None = None
    matched_by: str | None = None
    confidence: float = 0.0
    reason: str | None = None


def _unclear(kind: str, reason: str) -> Reading:
    return Reading(kind, reason=reason)


class _Grammar:
    """The phrases one case understands: its options, and in a pipeline the §6 commands."""

    def __init__(self, options: Sequence[Option], *, pipeline: bool) -> None:
        self.options = tuple(options)
        self.pipeline = pipeline
        self.phrases: list[_Phrase] = []
        for option in self.options:
            action = self.option_action(option)
            for words in {tokenize(option.label), tokenize(option.value)} - {()}:
                self.phrases.append(_Phrase(words, action, "option"))
        if pipeline:
            for words, (command, source) in SPELLINGS.items():
                self.phrases.append(
                    _Phrase(words, Action(f"command:{command}", None, command), source)
                )
            for verb in BARE_VERBS:
                self.phrases.append(_Phrase((verb,), Action(f"bare:{verb}"), "bare"))

    def option_action(self, option: Option) -> Action:
        command = None
        if self.pipeline:  # an option may be a §6 command under a friendlier label
            spelled = SPELLINGS.get(tokenize(option.value)) or SPELLINGS.get(tokenize(option.label))
            command = spelled[0] if spelled else None
        key = f"command:{command}" if command else f"option:{words_of(option.label)}"
        return Action(key, option, command)

    def at(self, words: tuple[str, ...], start: int) -> list[_Phrase]:
        """The longest phrases starting at `start`, one per action, options first."""
        fits = [p for p in self.phrases if words[start : start + len(p.words)] == p.words]
        if not fits:
            return []
        longest = max(len(p.words) for p in fits)
        fits = [p for p in fits if len(p.words) == longest]
        if any(p.source == "option" for p in fits):  # an offered "Retry" is not a bare verb
            fits = [p for p in fits if p.source != "bare"]
        one_each: dict[str, _Phrase] = {}
        for phrase in sorted(fits, key=lambda p: p.source != "option"):
            one_each.setdefault(phrase.action.key, phrase)
        return list(one_each.values())

    def mentions(self, words: tuple[str, ...]) -> list[_Mention]:
        found: list[_Mention] = []
        index = 0
        while index < len(words):
            phrases = self.at(words, index)
            if not phrases:
                index += 1
                continue
            negated = any(w in NEGATORS for w in words[max(0, index - 3) : index])
            end = index + len(phrases[0].words)
            found.extend(_Mention(index, end, phrase, negated) for phrase in phrases)
            index = end
        return found

    def resolve(self, phrase: _Phrase) -> Action | None:
        """The action with its option; None when several options carry the same command."""
        if phrase.action.option is not None or phrase.action.command is None:
            return phrase.action
        carriers = [o for o in self.options if self.option_action(o).key == phrase.action.key]
        if len(carriers) > 1:
            return None
        return Action(phrase.action.key, carriers[0] if carriers else None, phrase.action.command)


def _read_confirm(words: tuple[str, ...], grammar: _Grammar) -> Reading | None:
    if words[0] != "confirm" or any(p.words[0] == "confirm" for p in grammar.phrases):
        return None
    rest = words[1:]
    named = {p.action.key: p for p in grammar.phrases if p.words == rest and p.source != "bare"}
    if len(named) != 1:
        return _unclear("ambiguous", "two_actions" if named else "confirm_what")
    phrase = next(iter(named.values()))
    action = grammar.resolve(phrase)
    if action is None:
        return _unclear("ambiguous", "several_options")
    by = "exact" if phrase.source == "option" else phrase.source
    return Reading("confirm", action, by, 1.0)


def _read_lead(lead: _Mention, words: tuple[str, ...], grammar: _Grammar) -> Reading:
    phrase, rest = lead.phrase, words[lead.end :]
    if phrase.source == "bare":  # "reset phse" is a typo of one command; "reset it" of none
        return _read_fuzzy(words, grammar, []) or _unclear("ambiguous", "bare_verb")
    if phrase.source != "option" and phrase.action.command == "SKIP" and rest:
        return _unclear("ambiguous", "skip_not_alone")
    if is_hedged(rest):
        return _unclear("ambiguous", "hedged")
    if phrase.source != "option" and rest and is_gerund(rest[0]):
        return _unclear("ambiguous", "other_object")  # "stop waiting" does not stop the run
    action = grammar.resolve(phrase)
    if action is None:
        return _unclear("ambiguous", "several_options")
    if phrase.source != "option":
        return Reading("action", action, phrase.source, 1.0)
    return Reading(
        "action", action, "prefix" if rest else "exact", PREFIX_CONFIDENCE if rest else 1.0
    )


def _read_partial(words: tuple[str, ...], grammar: _Grammar) -> Reading | None:
    typed = " ".join(words)
    if len(typed) < 2:  # one letter is too short to be a prefix
        return None
    hits = {
        grammar.option_action(o).key: o
        for o in grammar.options
        if words_of(o.label).startswith(typed)
    }
    if not hits:
        return None
    # In a pipeline "re" may be the start of any reset, offered or typed: that is no choice.
    typed_commands = {
        p.action.key
        for p in grammar.phrases
        if p.source in ("command", "alias") and " ".join(p.words).startswith(typed)
    }
    if len(hits.keys() | typed_commands) > 1:
        return _unclear("ambiguous", "prefix_tie")
    option = next(iter(hits.values()))
    share = len(typed) / len(words_of(option.label))
    return Reading("action", grammar.option_action(option), "prefix", PREFIX_CONFIDENCE * share)


def _read_fuzzy(
    words: tuple[str, ...], grammar: _Grammar, mentions: list[_Mention]
) -> Reading | None:
    best: dict[str, tuple[float, _Phrase]] = {}
    for phrase in grammar.phrases:
        size = len(phrase.words)
        if phrase.source == "bare" or phrase.action.command in EXPLICIT_ONLY or len(words) < size:
            continue
        typed, meant = " ".join(words[:size]), " ".join(phrase.words)
        if phrase.source != "option" and (len(words) != size or typed.startswith(meant)):
            continue  # a command typo counts alone, not inflected: "continued" is no PROCEED
        cutoff = FUZZY_CUTOFF if phrase.source == "option" else COMMAND_FUZZY_CUTOFF
        # Word by word, so a shared "reset " never carries "reset the tree" to "reset the review".
        score = min(
            SequenceMatcher(None, said, word).ratio()
            for said, word in zip(words, phrase.words, strict=False)
        )
        if score >= cutoff and score > best.get(phrase.action.key, (0.0, phrase))[0]:
            best[phrase.action.key] = (score, phrase)
    if len(best) > 1:
        return _unclear("ambiguous", "fuzzy_tie")
    if not best:
        return None
    score, phrase = next(iter(best.values()))
    if any(m.phrase.action.key != phrase.action.key for m in mentions):
        return _unclear("ambiguous", "two_actions")
    if is_hedged(words[len(phrase.words) :]):
        return _unclear("ambiguous", "hedged")
    action = grammar.resolve(phrase)
    if action is None:
        return _unclear("ambiguous", "several_options")
    return Reading("action", action, "fuzzy", score)


def read_reply(text: str, options: Sequence[Option], *, pipeline: bool) -> Reading:
    """Read one reply, quotes already cut, against the options and in a pipeline the commands."""
    grammar = _Grammar(options, pipeline=pipeline)
    if any(mark in unicodedata.normalize("NFKC", text) for mark in QUESTION_MARKS):
        return _unclear("comment", "question")  # asking back decides nothing, wherever the "?"
    named = match_option_name(options, text)
    if named is not None:
        return Reading("action", grammar.option_action(named), "exact", 1.0)
    words = tokenize(text)
    if not words:
        return _unclear("comment", "no_words")  # "👍" alone is not an approval
    confirmed = _read_confirm(words, grammar)
    if confirmed is not None:
        return confirmed
    mentions = grammar.mentions(words)
    if len({m.phrase.action.key for m in mentions}) > 1:
        return _unclear("ambiguous", "two_actions")
    lead = next((m for m in mentions if m.start == 0), None)
    if lead is not None:
        return _read_lead(lead, words, grammar)
    if words[0] in NEGATORS or words[:2] in NEGATION_LEADS:
        return _unclear("comment", "negated")
    partial = _read_partial(words, grammar)
    if partial is not None:
        return partial
    if words[0] in QUESTION_WORDS:
        return _unclear("comment", "question")
    fuzzy = _read_fuzzy(words, grammar, mentions)
    if fuzzy is not None:
        return fuzzy
    if mentions:  # "please approve", "I don't approve": named, but not as an answer
        return _unclear("comment", "negated" if mentions[0].negated else "not_at_start")
    return _unclear("comment", "no_match")
