"""Reply grammar v2 (SPEC §6, §7): a reply names one action, confirms one, or is a comment."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from itertools import pairwise
from typing import Any

from workflows.case import Option

GRAMMAR_VERSION = "2"
FUZZY_CUTOFF = 0.8  # options: one slip in a short word still decides
COMMAND_FUZZY_CUTOFF = 0.85  # commands: "about" (0.8) must never read as "abort"
PREFIX_CONFIDENCE = 0.9  # a label typed in full then more words; a partial label scales it down

KINDS = frozenset({"decision", "command", "ambiguous", "comment", "confirm"})
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


_QUESTION_MARKS = "?¿؟⸮"  # after NFKC, which folds the full-width "？" into "?"
_QUESTION_WORDS = _word_set(
    "what why how when where who which whose should shall can could would will is are am "
    "was were do does did may might isnt arent doesnt didnt shouldnt couldnt wouldnt"
)
_NEGATORS = _word_set(
    "dont not never no nope nah cannot cant wont shouldnt mustnt neednt didnt doesnt"
)
_NEGATION_LEADS = frozenset({("do", "not"), ("please", "dont"), ("lets", "not"), ("better", "not")})
# After the action, words that take it back, hedge it or make it conditional.
_HEDGES = _NEGATORS | _word_set("wait actually nevermind but unless instead if maybe perhaps")
_NOT_GERUNDS = _word_set("everything nothing anything something during morning evening")
_HEDGE_PHRASES = (("scratch", "that"), ("hold", "on"), ("hold", "off"), ("just", "kidding"))
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'", "`": "'", "´": "'"})
_EDGE_PUNCTUATION = " \t\r\n.,;:!?¡¿\"'`()[]{}"


def _tokens(text: str) -> tuple[str, ...]:
    """Words only: case, emoji, punctuation (any script) and _/-/space differences vanish."""
    folded = unicodedata.normalize("NFKC", text).translate(_APOSTROPHES).casefold()
    return tuple(re.findall(r"[^\W_]+", folded.replace("'", "")))


def _words(text: str) -> str:
    return " ".join(_tokens(text))


def _spellings() -> dict[tuple[str, ...], tuple[str, str]]:
    table: dict[tuple[str, ...], tuple[str, str]] = {}
    for command in COMMANDS:
        words = tuple(command.lower().split("_"))
        table[words] = table[("".join(words),)] = (command, "command")  # RESET_PHASE, resetphase
    for alias, command in ALIASES.items():
        table[tuple(alias.split())] = (command, "alias")
    return table


_SPELLINGS = _spellings()


@dataclass(frozen=True)
class ReplyMatch:
    """How a reply was understood; equal when understood alike (evidence fields not compared)."""

    kind: str  # decision, command, confirm, ambiguous, comment
    option: Option | None = None
    matched_by: str | None = None  # option, exact, prefix, fuzzy, command, alias, confirm
    command: str | None = None
    confidence: float = field(default=1.0, compare=False)
    raw_reply: str = field(default="", compare=False)
    grammar_version: str = GRAMMAR_VERSION
    needs_confirmation: bool = False
    reason: str | None = field(default=None, compare=False)  # why it did not decide

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind: {self.kind!r} is not one of {sorted(KINDS)}")
        if self.option is None and self.command is None:
            object.__setattr__(self, "confidence", 0.0)  # nothing matched, nothing to be sure of

    @property
    def decides(self) -> bool:
        if self.kind == "confirm":
            return True
        return self.kind in ("decision", "command") and not self.needs_confirmation

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "option": self.option.label if self.option else None,
            "value": self.option.value if self.option else None,
            "command": self.command,
            "matched_by": self.matched_by,
            "confidence": round(self.confidence, 3),
            "raw_reply": self.raw_reply,
            "grammar_version": self.grammar_version,
            "needs_confirmation": self.needs_confirmation,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class _Action:
    key: str  # what is asked for: "command:STOP", "option:use backup", "bare:reset"
    option: Option | None = None
    command: str | None = None


@dataclass(frozen=True)
class _Phrase:
    words: tuple[str, ...]
    action: _Action
    source: str  # option, command, alias, bare


@dataclass(frozen=True)
class _Mention:
    start: int
    end: int
    phrase: _Phrase
    negated: bool


@dataclass(frozen=True)
class _Reading:
    kind: str  # action, confirm, ambiguous, comment
    action: _Action | None = None
    matched_by: str | None = None
    confidence: float = 0.0
    reason: str | None = None


def _unclear(kind: str, reason: str) -> _Reading:
    return _Reading(kind, reason=reason)


class _Grammar:
    """The phrases one case understands: its options, and in a pipeline the §6 commands."""

    def __init__(self, options: Sequence[Option], *, pipeline: bool) -> None:
        self.options = tuple(options)
        self.pipeline = pipeline
        self.phrases: list[_Phrase] = []
        for option in self.options:
            action = self.option_action(option)
            for words in {_tokens(option.label), _tokens(option.value)} - {()}:
                self.phrases.append(_Phrase(words, action, "option"))
        if pipeline:
            for words, (command, source) in _SPELLINGS.items():
                self.phrases.append(
                    _Phrase(words, _Action(f"command:{command}", None, command), source)
                )
            for verb in BARE_VERBS:
                self.phrases.append(_Phrase((verb,), _Action(f"bare:{verb}"), "bare"))

    def option_action(self, option: Option) -> _Action:
        command = None
        if self.pipeline:  # an option may be a §6 command under a friendlier label
            spelled = _SPELLINGS.get(_tokens(option.value)) or _SPELLINGS.get(_tokens(option.label))
            command = spelled[0] if spelled else None
        key = f"command:{command}" if command else f"option:{_words(option.label)}"
        return _Action(key, option, command)

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
            negated = any(w in _NEGATORS for w in words[max(0, index - 3) : index])
            end = index + len(phrases[0].words)
            found.extend(_Mention(index, end, phrase, negated) for phrase in phrases)
            index = end
        return found

    def resolve(self, phrase: _Phrase) -> _Action | None:
        """The action with its option; None when several options carry the same command."""
        if phrase.action.option is not None or phrase.action.command is None:
            return phrase.action
        carriers = [o for o in self.options if self.option_action(o).key == phrase.action.key]
        if len(carriers) > 1:
            return None
        return _Action(phrase.action.key, carriers[0] if carriers else None, phrase.action.command)


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


def _hedged(words: tuple[str, ...]) -> bool:
    pairs = set(pairwise(words))
    return any(w in _HEDGES for w in words) or any(p in pairs for p in _HEDGE_PHRASES)


def _is_gerund(word: str) -> bool:
    return len(word) > 4 and word.endswith("ing") and word not in _NOT_GERUNDS


def _unquoted(text: str) -> str:
    """The reply without the quoted message under it (">" lines) or its signature ("-- ")."""
    kept = []
    for line in text.splitlines():
        if line.rstrip() == "--":
            break
        if not line.lstrip().startswith(">"):
            kept.append(line)
    return "\n".join(kept)


def _read_confirm(words: tuple[str, ...], grammar: _Grammar) -> _Reading | None:
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
    return _Reading("confirm", action, by, 1.0)


def _read_lead(lead: _Mention, words: tuple[str, ...], grammar: _Grammar) -> _Reading:
    phrase, rest = lead.phrase, words[lead.end :]
    if phrase.source == "bare":  # "reset phse" is a typo of one command; "reset it" of none
        return _read_fuzzy(words, grammar, []) or _unclear("ambiguous", "bare_verb")
    if phrase.source != "option" and phrase.action.command == "SKIP" and rest:
        return _unclear("ambiguous", "skip_not_alone")
    if _hedged(rest):
        return _unclear("ambiguous", "hedged")
    if phrase.source != "option" and rest and _is_gerund(rest[0]):
        return _unclear("ambiguous", "other_object")  # "stop waiting" does not stop the run
    action = grammar.resolve(phrase)
    if action is None:
        return _unclear("ambiguous", "several_options")
    if phrase.source != "option":
        return _Reading("action", action, phrase.source, 1.0)
    return _Reading(
        "action", action, "prefix" if rest else "exact", PREFIX_CONFIDENCE if rest else 1.0
    )


def _read_partial(words: tuple[str, ...], grammar: _Grammar) -> _Reading | None:
    typed = " ".join(words)
    if len(typed) < 2:  # one letter is too short to be a prefix
        return None
    hits = {
        grammar.option_action(o).key: o
        for o in grammar.options
        if _words(o.label).startswith(typed)
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
    share = len(typed) / len(_words(option.label))
    return _Reading("action", grammar.option_action(option), "prefix", PREFIX_CONFIDENCE * share)


def _read_fuzzy(
    words: tuple[str, ...], grammar: _Grammar, mentions: list[_Mention]
) -> _Reading | None:
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
    if _hedged(words[len(phrase.words) :]):
        return _unclear("ambiguous", "hedged")
    action = grammar.resolve(phrase)
    if action is None:
        return _unclear("ambiguous", "several_options")
    return _Reading("action", action, "fuzzy", score)


def _read(text: str, options: Sequence[Option], *, pipeline: bool) -> _Reading:
    grammar = _Grammar(options, pipeline=pipeline)
    if any(mark in unicodedata.normalize("NFKC", text) for mark in _QUESTION_MARKS):
        return _unclear("comment", "question")  # asking back decides nothing, wherever the "?"
    named = match_option_name(options, text)
    if named is not None:
        return _Reading("action", grammar.option_action(named), "exact", 1.0)
    words = _tokens(text)
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
    if words[0] in _NEGATORS or words[:2] in _NEGATION_LEADS:
        return _unclear("comment", "negated")
    partial = _read_partial(words, grammar)
    if partial is not None:
        return partial
    if words[0] in _QUESTION_WORDS:
        return _unclear("comment", "question")
    fuzzy = _read_fuzzy(words, grammar, mentions)
    if fuzzy is not None:
        return fuzzy
    if mentions:  # "please approve", "I don't approve": named, but not as an answer
        return _unclear("comment", "negated" if mentions[0].negated else "not_at_start")
    return _unclear("comment", "no_match")


def _command_set(names: Iterable[str]) -> frozenset[str]:
    commands = set()
    for name in names:
        spelled = _SPELLINGS.get(_tokens(name))
        if spelled is None:
            raise ValueError(f"allowed_commands: {name!r} is not a command of SPEC §6")
        commands.add(spelled[0])
    return frozenset(commands)


def parse_reply(
    text: str,
    options: Sequence[Option],
    *,
    pipeline: bool = False,
    allowed_commands: Collection[str] | None = None,
    destructive: Collection[str] = frozenset(),
    critical: bool = False,
) -> ReplyMatch:
    """Understand one reply; never guess. Raises ValueError for an unknown allowed command."""
    allowed = frozenset(COMMANDS) if allowed_commands is None else _command_set(allowed_commands)
    reading = _read(_unquoted(text), options, pipeline=pipeline)
    action = reading.action
    if action is None:
        kind = "ambiguous" if reading.kind == "ambiguous" else "comment"
        return ReplyMatch(kind, raw_reply=text, reason=reading.reason)
    option, command, by, sure = (
        action.option,
        action.command,
        reading.matched_by,
        reading.confidence,
    )
    if command is not None and command not in allowed:
        # Recognised but not executable now (e.g. a reset past the cap): a recorded refusal.
        return ReplyMatch("comment", option, by, command, sure, text, reason="not_allowed")
    marked = {_words(name) for name in destructive} - {""}
    risky = (
        command in ALWAYS_DESTRUCTIVE
        or (critical and command == "STOP")
        or bool(command and _words(command) in marked)
        or bool(option and marked & {_words(option.label), _words(option.value)})
    )
    if reading.kind == "confirm" and risky:
        return ReplyMatch("confirm", option, "confirm", command, sure, text)
    kind = "decision" if option is not None else "command"
    reason = "needs_confirmation" if risky else None
    return ReplyMatch(
        kind, option, by, command, sure, text, needs_confirmation=risky, reason=reason
    )


def match_reply(options: Sequence[Option], text: str) -> ReplyMatch:
    """Match free text to one option (no pipeline commands): exact, prefix, fuzzy, or not."""
    return parse_reply(text, options)


_WHY = {
    "no_words": "The reply holds no words",
    "question": "That reads as a question",
    "negated": "That says what not to do",
    "two_actions": "That names more than one answer",
    "bare_verb": "That does not say which one",
    "skip_not_alone": "SKIP counts only when it is the whole reply",
    "hedged": "That answer is taken back or made conditional",
    "prefix_tie": "That fits more than one answer",
    "fuzzy_tie": "That fits more than one answer",
    "several_options": "That fits more than one answer",
    "confirm_what": "That does not say what to confirm",
    "other_object": "That seems to be about something other than the run",
}


def clarification(
    options: Sequence[Option], commands: Iterable[str] = (), *, match: ReplyMatch | None = None
) -> str:
    """What to answer the operator when a reply did not decide: the valid answers, and why."""
    answers = ", ".join([o.label for o in options] + list(commands)) or "(none)"
    if match is not None and match.needs_confirmation:
        name = match.command if match.option is None else match.option.label
        return f'{name} cannot be undone: reply "CONFIRM {name}" to go ahead, or one of: {answers}.'
    if match is not None and match.reason == "not_allowed":
        name = match.command or (match.option.label if match.option else "That")
        why = f"{name} cannot be used now"
    elif match is not None and match.reason in _WHY:
        why = _WHY[match.reason]
    else:
        why = "That is not one of the answers"
    return f"{why}, so nothing was decided. Reply with exactly one of: {answers}."
