"""High-entropy strings: detect-secrets' Base64/Hex plugins, tuned for prose and paths."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from workflows.secret_formats import MASK, decode
from workflows.secret_plugins import load_entropy

# Random-looking but not secret; masked before the entropy rule runs.
_NOT_SECRET = re.compile(
    r"""data:[\w/+.\-]+;base64,[A-Za-z0-9+/=]+                  # inline images and files
    |(?s:-----BEGIN\ (?:CERTIFICATE|[A-Z ]*PUBLIC\ KEY|PGP\ SIGNATURE).*?-----END[^-]*-----)
    |(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp\d+)\s+AAAA[A-Za-z0-9+/=]+  # public keys
    |(?:sha(?:1|256|384|512)[-:]|\bh1:)[A-Za-z0-9+/=]{20,}       # SRI, image, go.sum digests
    |[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}  # UUIDs, Celery task ids
    |(?<![A-Za-z0-9])(?:[0-9a-f]{7,64}|[0-9A-F]{7,64}|[0-9a-f]{96}|[0-9a-f]{128})
     (?![A-Za-z0-9])                                            # git SHAs, hex digests
    |(?<![A-Za-z0-9])(?-i:[0-7][0-9A-HJKMNP-TV-Z]{25}|[0-7][0-9a-hjkmnp-tv-z]{25})
     (?![A-Za-z0-9])                                            # ULIDs, TypeIDs (run_01h...)
    |<[\w.!#$%&'*+/=?^`{|}~\-]+@[\w\-]+(?:\.[\w\-]+)+>         # message ids (<...@mail.gmail.com>)
    |\b(?:ch|cus|pi|pm|evt|in|sub|prod|price|txn|re|po|acct|seti|py|src|card)_[A-Za-z0-9]{14,}
     (?!_)                                                      # Stripe object ids
    |(?:docs|drive)\.google\.com/[\w/]*?/d/[\w\-]+              # shared document ids
    |(?:\b|(?<=[_\-]))(?<!secret[_\-])ids?(?:-\d)?["']?\s*[:=]\s*["']?[\w\-+/=]+  # "x_id: ..."
    """,
    re.I | re.X,
)


def entropy_rule(text: str, found: dict[str, None], *, rescan: Callable[[str], list[str]]) -> str:
    """Mask each high-entropy value; base64 of text is judged by `rescan` on what it says."""
    scanner = load_entropy()
    text = _NOT_SECRET.sub(MASK, text)
    for plugin, regex in scanner.plugins:
        for match in regex.finditer(text):
            value = match.group()
            if not _is_random(value, plugin, scanner.is_sequential):
                continue
            # "=" inside a base64 run is not padding but an assignment: decode what follows it.
            decoded = decode(re.sub(r"^[^=]*=+(?=[^=])", "", value))
            if " " in decoded or decoded[:1] in ("{", "[") or _names_a_record(decoded):
                # Base64 of text, JSON or a record's name (gid://shop/Product/42): judged by
                # what it says (shorter each time, so finite).
                found.update(dict.fromkeys(rescan(decoded)))
            else:
                found["high-entropy string"] = None
            text = text.replace(value, MASK)
    return text


def _names_a_record(text: str) -> bool:
    """Whether decoded text is a type and a number ("User:42", "gid://shop/Product/42")."""
    parts = [part for part in re.split(r"[:/._\-#=&?]+", text) if part]
    return (
        any(part.isdigit() for part in parts)
        and any(part.isalpha() for part in parts)
        and all(part.isdigit() or (part.isalpha() and part.isascii()) for part in parts)
    )


# A part of a path or a compound id: what lies between the base64 charset's punctuation (and
# the backslash, which it also holds).
_PART = re.compile(r"[^\\\-_/.+=~]+")
# A word of a path or a name, not a chance run of base64: "runs", "Docs", "folders2", "1715".
_WORD = re.compile(r"(?:[a-z]{4,}|[A-Z][a-z]{3,})\d*|\d{4,}")
# Looser: also camelCase, acronyms and short hex, as identifiers are spelled.
_WORD_SHAPED = re.compile(r"(?:[A-Z]?[a-z]+|[A-Z]+)(?:[A-Z][a-z]+)*\d*|\d+|[0-9a-f]{1,12}")


def _is_random(value: str, plugin: Any, is_sequential: Callable[[str], bool]) -> bool:
    """Whether a value reads as a random credential rather than a path or a compound id."""
    if len(value) < 20 or is_sequential(value) or _is_wordy(value):
        return False
    parts = _PART.findall(value)
    if not any(_WORD.fullmatch(part) for part in parts):
        return _is_high_entropy(value, plugin)
    # With words in it, it is a path or a compound id (/tmp/acc-gitprobe-d45m9i64/runs/a,
    # web-7d4b9c8f6-x2lqp): judged by its parts, never as a whole, since the entropy of the
    # whole grows with the variety of its words and would make any long path look random. It
    # is random when one part is, or a stretch between its words is: letters changing case at
    # random across parts, as base64 does around its "/" and "+".
    return any(_is_high_entropy(run, plugin) for run in (*parts, *_mixed_case_runs(value)))


def _is_high_entropy(run: str, plugin: Any) -> bool:
    return len(run) >= 20 and bool(plugin.calculate_shannon_entropy(run) > plugin.entropy_limit)


def _mixed_case_runs(value: str) -> list[str]:
    """The stretches of `value` from one mixed-case part to another with no word between."""
    runs, start, end = [], -1, -1
    for part in _PART.finditer(value):
        if _is_mixed_case(part.group()):
            start, end = (part.start() if start < 0 else start), part.end()
        elif _WORD.fullmatch(part.group()) and start >= 0:
            runs.append(value[start:end])
            start = -1
    return [*runs, value[start:end]] if start >= 0 else runs


def _is_mixed_case(part: str) -> bool:
    """Upper and lower case letters mixed as no word mixes them (not "Docs", "camelCase")."""
    return part.lower() != part != part.upper() and not _WORD_SHAPED.fullmatch(part)


def _is_wordy(value: str) -> bool:
    """Paths, identifiers, pod names: every part a word, camelCase word, number or short run."""
    return all(len(part) <= 5 or _WORD_SHAPED.fullmatch(part) for part in _PART.findall(value))
