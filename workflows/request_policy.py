"""A request's policy text applied beside the design (SPEC §7): a few fixed sentence shapes,
read the same way every time, each verdict saying which clause decided and why.

The policy is split into clauses at ';', '.' and line ends. A clause counts when it has one
of these shapes (case ignored); any other clause is kept in the file and reported as not
applied, never guessed at:

- "escalate any irreversible action" (also "... irreversible actions/steps"): a human is
  needed when the situation names an irreversible step (IRREVERSIBLE below).
- "escalate <thing>" / "always escalate <thing>" / "ask on <thing>": a human is needed when
  the situation mentions <thing>.
- "auto-proceed on <thing> if <condition> is configured" (also "proceed", "skip asking"):
  no human for <thing> when <condition> is configured (given with --configured, or said
  in the situation as "<condition> is configured").
- "never escalate <thing>" / "don't escalate <thing>": no human for <thing>.

Precedence, safest first: an escalate clause that matches wins; then a proceed clause whose
condition holds; then the design's own verdict. A proceed clause never overrides harm_risk.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

# Words that name a step that cannot be taken back, as a job-hunting or ops run meets them.
_IRREVERSIBLE_WORDS = (
    "submit submitted submission send sent pay payment purchase buy withdraw delete deleted "
    "drop remove wipe apply accept decline sign irreversible permanently"
)
IRREVERSIBLE = frozenset(_IRREVERSIBLE_WORDS.split())
_ESCALATE_IRREVERSIBLE = re.compile(r"^(?:always )?escalate (?:any |all |every )?irreversible")
_ESCALATE = re.compile(r"^(?:always escalate|escalate|ask on|ask about) (?:on |any |all )?(.+)$")
_PROCEED = re.compile(
    r"^(?:auto[- ]?proceed|proceed|skip asking) (?:on |for )?(.+?)"
    r"(?: if (.+?) (?:is |are )?configured)?$"
)
_NEVER = re.compile(r"^(?:never|don'?t|do not) escalate (?:on |any )?(.+)$")


@dataclass(frozen=True)
class PolicyVerdict:
    """What the policy says: True/False when a clause decided, None when none applied."""

    needs_human: bool | None
    clause: str | None  # the clause that decided, as written
    reason: str
    unapplied: tuple[str, ...]  # clauses of no known shape


def clauses(policy: str) -> list[str]:
    return [c.strip() for c in re.split(r"[;.\n]+", policy) if c.strip()]


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.casefold()))


def _mentions(situation: str, thing: str) -> bool:
    """Every word of the thing (ignoring a trailing plural s) is in the situation."""
    have = {w.removesuffix("s") for w in _words(situation)}
    wanted = {w.removesuffix("s") for w in _words(thing)} - {"a", "an", "the", "any"}
    return bool(wanted) and wanted <= have


def _configured(condition: str, situation: str, configured: Collection[str]) -> bool:
    wanted = " ".join(sorted(_words(condition)))
    given = {" ".join(sorted(_words(name))) for name in configured}
    said = re.search(
        rf"\b{re.escape(condition.casefold())}\s+(?:is |are )?configured", situation.casefold()
    )
    return wanted in given or said is not None


def apply_policy(
    policy: str, situation: str, *, configured: Collection[str] = (), harm_risk: bool = False
) -> PolicyVerdict:
    """Read the policy's clauses against the situation; deterministic, first match by rank."""
    escalating: list[tuple[str, str]] = []
    proceeding: list[tuple[str, str]] = []
    unapplied: list[str] = []
    for clause in clauses(policy):
        text = " ".join(clause.casefold().split())
        if _ESCALATE_IRREVERSIBLE.match(text):
            found = sorted(_words(situation) & IRREVERSIBLE)
            if found:
                escalating.append(
                    (clause, f"the situation names an irreversible step ({found[0]})")
                )
            continue
        if never := _NEVER.match(text):
            if _mentions(situation, never.group(1)):
                proceeding.append((clause, f"the situation is about {never.group(1)}"))
            continue
        if proceed := _PROCEED.match(text):
            thing, condition = proceed.group(1), proceed.group(2)
            if _mentions(situation, thing):
                if condition is None:
                    proceeding.append((clause, f"the situation is about {thing}"))
                elif _configured(condition, situation, configured):
                    proceeding.append((clause, f"{thing}, and {condition} is configured"))
            continue
        if escalate := _ESCALATE.match(text):
            if _mentions(situation, escalate.group(1)):
                escalating.append((clause, f"the situation mentions {escalate.group(1)}"))
            continue
        unapplied.append(clause)
    if escalating:
        clause, why = escalating[0]
        return PolicyVerdict(True, clause, f"policy {clause!r}: {why}", tuple(unapplied))
    if proceeding:
        clause, why = proceeding[0]
        if harm_risk:
            reason = f"policy {clause!r} would proceed ({why}), but harm_risk always asks"
            return PolicyVerdict(None, None, reason, tuple(unapplied))
        return PolicyVerdict(False, clause, f"policy {clause!r}: {why}", tuple(unapplied))
    return PolicyVerdict(None, None, "no policy clause applies", tuple(unapplied))
