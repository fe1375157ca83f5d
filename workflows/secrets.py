"""Secret detection for escalation packets: which kinds of secret a text holds (SPEC §1)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from workflows.secret_entropy import entropy_rule
from workflows.secret_formats import plugin_rule, private_key_rule, provider_rule, url_rule
from workflows.secret_keywords import keyword_rule, names_a_secret


@dataclass(frozen=True)
class SecretFinding:
    """One kind of secret in one field: the field's path and the kind, never the value."""

    field: str
    kind: str


def scan_text(text: str) -> list[str]:
    """Kinds of secret found in one string (deduplicated, stable order); [] when clean."""
    if text in _CLEAN:
        return []
    found: dict[str, None] = {}
    scanned = text
    for rule in _RULES:
        scanned = rule(scanned, found)
    if not found and len(text) <= _CLEAN_UP_TO:
        if len(_CLEAN) >= _CLEAN_KEPT:
            _CLEAN.clear()
        _CLEAN.add(text)
    return list(found)


# Short strings found clean, so each is scanned once: packets repeat their keys and many of
# their small values (half of a packet's scans). Only clean ones: no secret is kept here.
_CLEAN: set[str] = set()
_CLEAN_UP_TO, _CLEAN_KEPT = 64, 4096


def find_secrets(value: object, *, path: str = "") -> list[SecretFinding]:
    """Every secret in a JSON-like value, one finding per (field, kind); keys count as text."""
    findings: dict[SecretFinding, None] = {}
    for field, kinds in _walk(value, path):
        findings.update((SecretFinding(field, kind), None) for kind in kinds)
    return list(findings)


def _walk(value: object, path: str) -> Iterator[tuple[str, list[str]]]:
    if isinstance(value, str):
        yield path, scan_text(value)
    elif isinstance(value, Mapping):
        for index, (key, item) in enumerate(value.items()):
            key_kinds = scan_text(str(key))
            # A key that is itself a secret must not leak through the path that names it.
            name = f"<key {index}>" if key_kinds else str(key)
            child = f"{path}.{name}" if path else name
            yield child, key_kinds
            if isinstance(item, str | int | float) and names_a_secret(str(key)):
                # {"db_password": "hunter2"}: the key names the value; read them as one assignment.
                yield child, scan_text(f"{key}={item}")
            yield from _walk(item, child)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _walk(item, f"{path}[{index}]")


def _entropy_rule(text: str, found: dict[str, None]) -> str:
    # Base64 of text is judged by what it says, with every rule: hence scan_text passed down.
    return entropy_rule(text, found, rescan=scan_text)


# Each rule records the kinds it finds in `found` and returns the text with those values
# masked, so the rules after it neither report them again nor read them as a value.
# Provider formats come before detect-secrets' plugins, so a token used as a URL password
# (https://x-access-token:github_pat_...@github.com) is named as the token as well.
_RULES: list[Callable[[str, dict[str, None]], str]] = [
    private_key_rule,
    provider_rule,
    plugin_rule,
    url_rule,
    keyword_rule,
    _entropy_rule,
]
