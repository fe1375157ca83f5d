"""Secret detection for escalation packets: which kinds of secret a text holds (SPEC §1)."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

# Stands in for a value once found, so later rules neither report it twice nor read the next
# word as its value; no rule's character class contains it.
_MASK = "\x00"


@dataclass(frozen=True)
class SecretFinding:
    """One kind of secret in one field: the field's path and the kind, never the value."""

    field: str
    kind: str


def scan_text(text: str) -> list[str]:
    """Kinds of secret found in one string (deduplicated, stable order); [] when clean."""
    found: dict[str, None] = {}
    for rule in _RULES:
        text = rule(text, found)
    return list(found)


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
            if isinstance(item, str | int | float) and _KEY_NAME.fullmatch(str(key)):
                # {"db_password": "hunter2"}: the key names the value; read them as one assignment.
                yield child, scan_text(f"{key}={item}")
            yield from _walk(item, child)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _walk(item, f"{path}[{index}]")


def _mask(text: str, value: str) -> str:
    # Also swallow the rest of the token, e.g. a signature after the part a regex matched.
    return re.sub(re.escape(value) + r"[\w\-+/=.~]*", _MASK, text)


# --- provider formats: detect-secrets' plugins, then the formats it does not know -------------

# detect-secrets' names for its regex plugins -> ours (a plugin not listed keeps its own name).
# Not used: its IP plugin (an IP is not a credential), its keyword plugin (tuned for quoted code
# assignments; ours reads prose) and its JWT regex (quadratic on "eyJeyJ..."; its check is kept).
_KINDS = {
    "AWS Access Key": "AWS access key",
    "Azure Storage Account access key": "Azure storage key",
    "Basic Auth Credentials": "URL credentials",
    "GitHub Token": "GitHub token",
    "GitLab Token": "GitLab token",
    "Mailchimp Access Key": "Mailchimp key",
    "NPM tokens": "npm token",
    "OpenAI Token": "OpenAI API key",
    "Private Key": "private key",
    "SendGrid API Key": "SendGrid API key",
    "Slack Token": "Slack token",
    "Stripe Access Key": "Stripe key",
    "Twilio API Key": "Twilio API key",
    "PyPI Token": "PyPI token",
    "Discord Bot Token": "Discord bot token",
    "Telegram Bot Token": "Telegram bot token",
}
_UNUSED = {"Public IP (ipv4)", "Secret Keyword", "JSON Web Token"}
# These regexes backtrack quadratically on long runs ("sk-sk-sk-...", many "//" on one line) but
# each needs a literal: skipping them when it is absent finds the same, in bounded time.
_PLUGIN_NEEDS = {"NPM tokens": "_authToken", "OpenAI Token": "T3BlbkFJ"}


@dataclass(frozen=True)
class _Scanner:
    """The detect-secrets pieces we use, loaded once."""

    plugins: list[tuple[str, str, Any]]  # (needed literal, our kind, RegexBasedDetector)
    entropy_plugins: list[tuple[Any, re.Pattern[str]]]  # Base64/Hex plugin, its unquoted regex
    is_sequential: Callable[[str], bool]
    is_jwt: Callable[[str], bool]


@cache
def _scanner() -> _Scanner:
    # Loaded on first scan, not with this module: detect-secrets imports requests (~100 ms).
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.filters.heuristic import is_sequential_string
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.high_entropy_strings import HighEntropyStringsPlugin
    from detect_secrets.plugins.jwt import JwtTokenDetector

    classes: dict[str, Any] = get_mapping_from_secret_type_to_class()
    plugins = [
        (_PLUGIN_NEEDS.get(name, ""), _KINDS.get(name, name), cls())
        for name, cls in classes.items()
        if issubclass(cls, RegexBasedDetector) and name not in _UNUSED
    ]
    # Each entropy plugin with its own unquoted regex (non_quoted_string_regex) but not its
    # eager mode, which drops the entropy limit and flags every word.
    entropy = [
        (plugin, re.compile(f"[{re.escape(plugin.charset)}]+"))
        for plugin in (cls() for cls in classes.values())
        if isinstance(plugin, HighEntropyStringsPlugin)
    ]
    return _Scanner(plugins, entropy, is_sequential_string, JwtTokenDetector.is_formally_valid)


def _plugin_rule(text: str, found: dict[str, None]) -> str:
    for needed, kind, plugin in _scanner().plugins:
        if needed not in text:
            continue
        for value in plugin.analyze_string(text):
            if kind == "URL credentials" and _is_placeholder(value):
                continue
            found["Slack webhook" if value.startswith("https://hooks.slack") else kind] = None
            text = _mask(text, value)
    return text


# Formats detect-secrets 1.5.0 misses. Each must start a token, so words do not match.
_PROVIDERS = [
    ("JSON Web Token", r"eyJ[\w\-]*={0,2}\.[\w\-]*={0,2}(?:\.[\w\-+/]*=*)?"),
    ("Anthropic API key", r"sk-ant-[a-z]+\d*-[A-Za-z0-9_\-]{20,}"),
    ("OpenAI API key", r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
    ("GitHub token", r"github_pat_[A-Za-z0-9_]{50,}|gh[pousr]_[A-Za-z0-9]{30,}"),
    ("Stripe key", r"(?:sk|rk)_(?:test|live)_[0-9A-Za-z]{20,}|whsec_[A-Za-z0-9+/]{24,}"),
    ("Google API key", r"AIza[0-9A-Za-z_\-]{35}"),
    ("Hugging Face token", r"hf_[A-Za-z0-9]{30,}"),
    ("Slack token", r"xapp-\d-[A-Za-z0-9-]{20,}|xox[a-z]-[A-Za-z0-9-]{20,}"),
    ("Discord webhook", r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/\S+"),
    ("npm token", r"npm_[A-Za-z0-9]{36}"),
    (
        "AWS secret key",
        r"(?i:aws)[\w.\-]{0,30}?(?i:secret|key)[\w.\-\"']{0,20}?\s*[:=]\s*[\"']?"
        r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
    ),
    ("bearer token", r"(?i:bearer)\s+[A-Za-z0-9._~+/\-]{16,}=*"),
]
_PROVIDER_RES = [(k, re.compile(r"(?<![A-Za-z0-9_\-])(?:" + p + ")")) for k, p in _PROVIDERS]
# The whole PEM block, body included, so its base64 is not reported again as high entropy.
_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END[^-]*-----)?", re.S
)


def _private_key_rule(text: str, found: dict[str, None]) -> str:
    for match in _PRIVATE_KEY.finditer(text):
        found["private key"] = None
        text = text.replace(match.group(), _MASK)
    return text


def _provider_rule(text: str, found: dict[str, None]) -> str:
    for kind, regex in _PROVIDER_RES:
        for match in regex.finditer(text):
            if kind == "JSON Web Token" and not _scanner().is_jwt(match.group()):
                continue
            found[kind] = None
            text = _mask(text, match.group())
    return text


# Any scheme (postgres, mysql, redis, amqp, mongodb+srv, https...) with user:password@host;
# the password runs to the last "@" of the authority, so "p@ss" inside it is kept whole.
_URL_CREDENTIALS = re.compile(
    r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/?#@\x00]*:([^\s/?#\x00]+)@"
)


def _url_rule(text: str, found: dict[str, None]) -> str:
    for match in _URL_CREDENTIALS.finditer(text):
        if not _is_placeholder(match.group(1)):
            found["URL credentials"] = None
            text = text.replace(match.group(1), _MASK)
    return text


# Placeholders are not secrets: masked (***, xxx), templated (<pw>, ${X}, $X, {{ x }}, %(x)s),
# redacted, and documentation stand-ins. Well-known defaults ("changeme") count as stand-ins:
# they leak nothing, and refusing them would teach people to dodge the check.
_PLACEHOLDER = re.compile(
    r"""[*x•#.]{3,}|<[^<>]*>|\$\{[^}]*\}|\$\(.*\)|\$\w+|\{\{.*\}\}|\{[\w.\s]*\}|%\(\w+\)s|%s
    |[(\[]?(?:redacted|hidden|masked|filtered|removed|omitted|secret|password|changeme
    |example|placeholder|dummy|none|null|nil|undefined|empty|unset|your[_\-]?\w*)[)\]]?""",
    re.I | re.X,
)


def _is_placeholder(value: str) -> bool:
    return _PLACEHOLDER.fullmatch(value.strip("\"'`")) is not None


# --- our keyword rule: "password=...", "pwd: ...", "the password is ...", "token=..." --------
#
# A keyword alone is prose ("the token expired", "password reset is broken"); it is a secret
# only with a value that looks like one. Two strengths of evidence:
# - a password assigned (`=`, `:=`, `=>`) or quoted: any value of 6+ characters that is not a
#   placeholder, a reference ($X, f(x), /path) or a stop word ("required", "missing");
# - prose ("password: x", "password is x", "passwd x", "changed to x") and every token, secret
#   or API key: the value must also mix character classes and not be only words, numbers and
#   technical terms ("SHA256-hashed", "JWT-based"), unless it is a long unbroken alphanumeric run.
# So "the password is hunter2" is a secret and "the password is letmein" is not: the price of
# never refusing "the password is incorrect".
_KEY_WORDS = r"""(?:(?<![A-Za-z0-9])(?:pass|pwd)|password|passwd|passphrase|(?<!page[_-])token
    |secret(?:[_-]?(?:access[_-]?)?key(?:[_-]base)?)?|api[_-]?key|private[_-]?key|access[_-]?key)"""
_KEY_NAME = re.compile(r"[\w.\-]*" + _KEY_WORDS, re.I | re.X)
_KEYWORD = re.compile(
    _KEY_WORDS
    + r"""(?![A-Za-z0-9])["'`]?
    (?:(?:\s+for\s+(?:[\w@.\-]+\s+){0,3}?[\w@.\-]+)?  # "password for the staging DB is ..."
       (?:\s*(?P<assign>:=|=>|=)
        |\s(?:(?:is|was|has\s+been)\s+)?(?:now\s+)?(?:set|changed|reset|updated)\s+to\b
        |\s*:|\s(?:is|was)\b:?|\sto\b)
     |(?P<space>\s))
    \s*(?P<value>"[^"\x00]*"|'[^'\x00]*'|`[^`\x00]*`|[^\s"'`,;\x00]+)""",
    re.I | re.X,
)
_STOP_WORDS = frozenset(
    {
        "required",
        "missing",
        "invalid",
        "expired",
        "incorrect",
        "wrong",
        "correct",
        "provided",
        "present",
        "changed",
        "rotated",
        "revoked",
        "enabled",
        "disabled",
        "optional",
        "unknown",
        "default",
        "needed",
        "stored",
        "rejected",
        "accepted",
        "blank",
        "generated",
        "updated",
        "protected",
        "encrypted",
        "hashed",
        "managed",
        "configured",
        "false",
        "true",
    }
)
_TECH_TERM = re.compile(
    r"(?:sha|md|aes|rsa|hs|rs|es|ps|ed|x|utf|base|argon|pbkdf|oauth|http|tls|ssl|v|k|i)\d+"
    r"(?:[a-z]{1,2}\d*)?|"
    r"[A-Za-z]+|\d+[a-z]*",  # and plain words, numbers, "12chars", "15m"
    re.I,
)
# curl -u user:password, and "Authorization: Basic base64(user:password)".
_USER_OPTION = re.compile(r"(?<!\S)(?:-u|--user)[\s=]+[^\s:\x00]+:([^\s\x00]+)")
_BASIC_AUTH = re.compile(r"(?<![A-Za-z0-9])[Bb]asic\s+([A-Za-z0-9+/]{8,}={0,2})(?![\w+/=])")


def _keyword_rule(text: str, found: dict[str, None]) -> str:
    for match in _USER_OPTION.finditer(text):
        if _looks_like_credential(match.group(1), loose=True):
            found["password"] = None
            text = text.replace(match.group(1), _MASK)
    for match in _BASIC_AUTH.finditer(text):
        _, colon, password = _decode(match.group(1)).partition(":")
        if colon and password and not _is_placeholder(password):
            found["basic auth credentials"] = None
            text = text.replace(match.group(1), _MASK)
    for match in _KEYWORD.finditer(text):
        keyword = match.group()[: match.start("value") - match.start()].lower()
        is_password = "pass" in keyword or "pwd" in keyword
        quoted = match.group("value")[0] in "\"'`"
        value = match.group("value").strip("\"'`").rstrip(".,)]}>")
        if match.group("space") is not None and not is_password:
            continue
        loose = is_password and (match.group("assign") is not None or quoted)
        if _looks_like_credential(value, loose=loose):
            kind = "token" if "token" in keyword else "API key" if "api" in keyword else "secret"
            found["password" if is_password else kind] = None
            text = text.replace(value, _MASK)
    return text


def _looks_like_credential(value: str, *, loose: bool) -> bool:
    if len(value) < 6 or _is_placeholder(value) or value.lower() in _STOP_WORDS:
        return False
    if value[0] in "$%@/~(<{" or value.startswith("./") or re.match(r"[A-Za-z_][\w.]*[(\[]", value):
        return False  # where the secret lives, not the secret
    if loose or (len(value) >= 16 and value.isalnum()):
        return True
    if all(_TECH_TERM.fullmatch(part) for part in re.split(r"[\s\-_./:]+", value) if part):
        return False
    lower, upper = any(c.islower() for c in value), any(c.isupper() for c in value[1:])
    digit = any(c.isdigit() for c in value)
    symbol = any(not c.isalnum() and c not in "-_./:" for c in value)
    return lower + upper + digit + symbol >= 2 and (lower or symbol)


# --- high-entropy strings: detect-secrets' Base64/Hex plugins, tuned for prose ---------------

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


def _entropy_rule(text: str, found: dict[str, None]) -> str:
    scanner = _scanner()
    text = _NOT_SECRET.sub(_MASK, text)
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
            decoded = _decode(re.sub(r"^[^=]*=+(?=[^=])", "", value))
            if " " in decoded or decoded[:1] in ("{", "["):
                # Base64 of text or JSON: judged by what it says (shorter each time, so finite).
                found.update(dict.fromkeys(scan_text(decoded)))
            else:
                found["high-entropy string"] = None
            text = text.replace(value, _MASK)
    return text


_WORD_SHAPED = re.compile(r"(?:[A-Z]?[a-z]+|[A-Z]+)(?:[A-Z][a-z]+)*\d*|\d+|[0-9a-f]{1,12}")


def _is_wordy(value: str) -> bool:
    """Paths, identifiers, pod names: every part a word, camelCase word, number or short run."""
    parts = [part for part in re.split(r"[\-_/.+=~]+", value) if part]
    return all(len(part) <= 5 or _WORD_SHAPED.fullmatch(part) for part in parts)


def _decode(value: str) -> str:
    """The text a base64 value encodes, or "" when it does not encode printable text."""
    try:
        text = base64.b64decode(value + "=" * (-len(value) % 4), altchars=b"-_").decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return ""
    return text if all(c.isprintable() or c in "\t\r\n" for c in text) else ""


_RULES: list[Callable[[str, dict[str, None]], str]] = [
    _private_key_rule,
    _plugin_rule,
    _provider_rule,
    _url_rule,
    _keyword_rule,
    _entropy_rule,
]
