"""Reply grammar v2 (SPEC §6, §7): a reply names one action, confirms one, or is a comment."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from workflows.case import Option
from workflows.errors import InvalidInput
from workflows.reply_reading import (
    read_reply,
)
from workflows.reply_vocabulary import (
    ALWAYS_DESTRUCTIVE,
    COMMANDS,
    SPELLINGS,
    strip_quoted,
    tokenize,
    words_of,
)

GRAMMAR_VERSION = "2"
KINDS = frozenset({"decision", "command", "ambiguous", "comment", "confirm"})


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
            raise InvalidInput(f"kind: {self.kind!r} is not one of {sorted(KINDS)}")
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


def _command_set(names: Iterable[str]) -> frozenset[str]:
    commands = set()
    for name in names:
        spelled = SPELLINGS.get(tokenize(name))
        if spelled is None:
            raise InvalidInput(f"allowed_commands: {name!r} is not a command of SPEC §6")
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
    reading = read_reply(strip_quoted(text), options, pipeline=pipeline)
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
    marked = {words_of(name) for name in destructive} - {""}
    risky = (
        command in ALWAYS_DESTRUCTIVE
        or (critical and command == "STOP")
        or bool(command and words_of(command) in marked)
        or bool(option and marked & {words_of(option.label), words_of(option.value)})
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
    options: Sequence[Option],
    commands: Iterable[str] = (),
    *,
    match: ReplyMatch | None = None,
    code: str = "",
) -> str:
    """What to answer the operator when a reply did not decide: the valid answers, and why.
    With the case's `code`, the hint to confirm is the whole reply to send."""
    answers = ", ".join([o.label for o in options] + list(commands)) or "(none)"
    if match is not None and match.needs_confirmation:
        name = match.command if match.option is None else match.option.label
        reply = f"{code} CONFIRM {name}" if code else f"CONFIRM {name}"
        return f'{name} cannot be undone: reply "{reply}" to go ahead, or one of: {answers}.'
    if match is not None and match.reason == "not_allowed":
        name = match.command or (match.option.label if match.option else "That")
        why = f"{name} cannot be used now"
    elif match is not None and match.reason in _WHY:
        why = _WHY[match.reason]
    else:
        why = "That is not one of the answers"
    return f"{why}, so nothing was decided. Reply with exactly one of: {answers}."
