"""High-entropy strings: detect-secrets' Base64/Hex plugins, tuned for prose."""

from __future__ import annotations

import re
from collections.abc import Callable

from workflows.secret_formats import MASK, decode, load_scanner

# Random-looking but not secret; masked before the entropy rule runs.
_NOT_SECRET = re.compile(
    r"""data:[\w/+.\-]+;base64,[A-Za-z0-9+/=]+                  # inline images and files
    |(?s:-----BEGIN\ (?:CERTIFICATE|[A-Z ]*PUBLIC\ KEY|PGP\ SIGNATURE).*?-----END[^-]*-----)
    |(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp\d+)\s+AAAA[A-Za-z0-9+/=]+  # public keys
    |sha(?:1|256|384|512)[-:][A-Za-z0-9+/=]{20,}                # SRI hashes, image digests
    |[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}  # UUIDs, Celery task ids
    |(?<![A-Za-z0-9])(?:[0-9a-f]{7,64}|[0-9A-F]{7,64}|[0-9a-f]{96}|[0-9a-f]{128})
     (?![A-Za-z0-9])                                            # git SHAs, hex digests
    |\b(?:ch|cus|pi|pm|evt|in|sub|prod|price|txn|re|po|acct|seti|py|src|card)_[A-Za-z0-9]{14,}
     (?!_)                                                      # Stripe object ids
    |(?:docs|drive)\.google\.com/[\w/]*?/d/[\w\-]+              # shared document ids
    |(?:\b|(?<=[_\-]))(?<!secret[_\-])ids?(?:-\d)?["']?\s*[:=]\s*["']?[\w\-+/=]+  # "x_id: ..."
    """,
    re.I | re.X,
)


def entropy_rule(text: str, found: dict[str, None], *, rescan: Callable[[str], list[str]]) -> str:
    """Mask each high-entropy value; base64 of text is judged by `rescan` on what it says."""
    scanner = load_scanner()
    text = _NOT_SECRET.sub(MASK, text)
    for plugin, regex in scanner.entropy_plugins:
        for match in regex.finditer(text):
            value = match.group()
            if (
                len(value) < 20
                or plugin.calculate_shannon_entropy(value) <= plugin.entropy_limit
                or scanner.is_sequential(value)
                or _is_wordy(value)
            ):
                continue
            # "=" inside a base64 run is not padding but an assignment: decode what follows it.
            decoded = decode(re.sub(r"^[^=]*=+(?=[^=])", "", value))
            if " " in decoded or decoded[:1] in ("{", "["):
                # Base64 of text or JSON: judged by what it says (shorter each time, so finite).
                found.update(dict.fromkeys(rescan(decoded)))
            else:
                found["high-entropy string"] = None
            text = text.replace(value, MASK)
    return text


_WORD_SHAPED = re.compile(r"(?:[A-Z]?[a-z]+|[A-Z]+)(?:[A-Z][a-z]+)*\d*|\d+|[0-9a-f]{1,12}")


def _is_wordy(value: str) -> bool:
    """Paths, identifiers, pod names: every part a word, camelCase word, number or short run."""
    parts = [part for part in re.split(r"[\-_/.+=~]+", value) if part]
    return all(len(part) <= 5 or _WORD_SHAPED.fullmatch(part) for part in parts)
