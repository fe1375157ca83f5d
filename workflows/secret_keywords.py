"""Secrets named by a keyword: "password=...", "the password is ...", "token: ...", curl -u."""

from __future__ import annotations

import re

from workflows.secret_formats import MASK, decode, is_placeholder, lazy

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
# Every keyword above holds one of these, in any case: text without one need not compile the
# patterns built on them (same flag, so a letter matches as there: ſ for s, K for k).
_KEY_HINT = re.compile("pass|pwd|token|secret|key", re.I)
_KEY_NAME = lazy(r"[\w.\-]*" + _KEY_WORDS, re.I | re.X)
_KEYWORD = lazy(
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
_TECH_TERM = lazy(
    r"(?:sha|md|aes|rsa|hs|rs|es|ps|ed|x|utf|base|argon|pbkdf|oauth|http|tls|ssl|v|k|i)\d+"
    r"(?:[a-z]{1,2}\d*)?|"
    # and words, numbers, "12chars", "15m", spelled as words are: not "aLRirxzoRDz", "8jaLRirx"
    r"(?-i:(?:[A-Z]?[a-z]+|[A-Z]+)(?:[A-Z][a-z]+)*|\d+[a-z]*)",
    re.I,
)
# curl -u user:password, and "Authorization: Basic base64(user:password)".
_USER_OPTION = lazy(r"(?<!\S)(?:-u|--user)[\s=]+[^\s:\x00]+:([^\s\x00]+)")
_BASIC_AUTH = lazy(r"(?<![A-Za-z0-9])[Bb]asic\s+([A-Za-z0-9+/]{8,}={0,2})(?![\w+/=])")


def names_a_secret(key: str) -> bool:
    """Whether a key names a secret ("db_password", "API-Key"): its value is read with it."""
    return _KEY_HINT.search(key) is not None and _KEY_NAME().fullmatch(key) is not None


def keyword_rule(text: str, found: dict[str, None]) -> str:
    """Credentials after -u/--user, in Basic auth headers, and after a keyword (see above)."""
    # Each pattern is run only on text holding what it must match ("-u", "asic", a keyword).
    for match in _USER_OPTION().finditer(text) if "-u" in text else ():
        if _looks_like_credential(match.group(1), loose=True):
            found["password"] = None
            text = text.replace(match.group(1), MASK)
    for match in _BASIC_AUTH().finditer(text) if "asic" in text else ():
        _, colon, password = decode(match.group(1)).partition(":")
        if colon and password and not is_placeholder(password):
            found["basic auth credentials"] = None
            text = text.replace(match.group(1), MASK)
    for match in _KEYWORD().finditer(text) if _KEY_HINT.search(text) else ():
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
            text = text.replace(value, MASK)
    return text


def _looks_like_credential(value: str, *, loose: bool) -> bool:
    if len(value) < 6 or is_placeholder(value) or value.lower() in _STOP_WORDS:
        return False
    if value[0] in "$%@/~(<{" or value.startswith("./") or re.match(r"[A-Za-z_][\w.]*[(\[]", value):
        return False  # where the secret lives, not the secret
    if loose or (len(value) >= 16 and value.isalnum()):
        return True
    if all(_TECH_TERM().fullmatch(part) for part in re.split(r"[\s\-_./:]+", value) if part):
        return False
    lower, upper = any(c.islower() for c in value), any(c.isupper() for c in value[1:])
    digit = any(c.isdigit() for c in value)
    symbol = any(not c.isalnum() and c not in "-_./:" for c in value)
    return lower + upper + digit + symbol >= 2 and (lower or symbol)
