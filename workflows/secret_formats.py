"""Secrets known by their format: detect-secrets' plugins, provider tokens, keys, URL passwords."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from functools import cache, partial

from workflows.secret_plugins import is_jwt, may_match, plugin_modules, regex_plugins

# --- shared by every rule: the mask, placeholders, base64 text -----------------------------

# Stands in for a value once found, so later rules neither report it twice nor read the next
# word as its value; no rule's character class contains it.
MASK = "\x00"


def lazy(pattern: str, flags: int = 0) -> Callable[[], re.Pattern[str]]:
    """The pattern, compiled on the first call: `escalate check` pays only for what it runs."""
    return cache(partial(re.compile, pattern, flags))


def mask(text: str, value: str) -> str:
    """`text` with `value` masked, and the rest of its token (e.g. a signature past the match)."""
    return re.sub(re.escape(value) + r"[\w\-+/=.~]*", MASK, text)


# Placeholders are not secrets: masked (***, xxx), templated (<pw>, ${X}, $X, {{ x }}, %(x)s),
# redacted, and documentation stand-ins. Well-known defaults ("changeme") count as stand-ins:
# they leak nothing, and refusing them would teach people to dodge the check.
_PLACEHOLDER = lazy(
    r"""[*x•#.]{3,}|<[^<>]*>|\$\{[^}]*\}|\$\(.*\)|\$\w+|\{\{.*\}\}|\{[\w.\s]*\}|%\(\w+\)s|%s
    |[(\[]?(?:redacted|hidden|masked|filtered|removed|omitted|secret|password|changeme
    |example|placeholder|dummy|none|null|nil|undefined|empty|unset|your[_\-]?\w*)[)\]]?""",
    re.I | re.X,
)


def is_placeholder(value: str) -> bool:
    """Whether a value is a stand-in (***, <pw>, ${X}, changeme...) rather than a secret."""
    return _PLACEHOLDER().fullmatch(value.strip("\"'`")) is not None


def decode(value: str) -> str:
    """The text a base64 value encodes, or "" when it does not encode printable text."""
    try:
        text = base64.b64decode(value + "=" * (-len(value) % 4), altchars=b"-_").decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return ""
    return text if all(c.isprintable() or c in "\t\r\n" for c in text) else ""


# --- provider formats: detect-secrets' plugins, then the formats it does not know -------------


def plugin_rule(text: str, found: dict[str, None]) -> str:
    """What detect-secrets' regex plugins find (placeholder URL passwords aside)."""
    for module in plugin_modules():
        if not may_match(module, text):  # the module is not even loaded: see NEEDS
            continue
        for kind, plugin in regex_plugins(module):
            for value in plugin.analyze_string(text):
                if kind == "URL credentials" and is_placeholder(value):
                    continue
                found["Slack webhook" if value.startswith("https://hooks.slack") else kind] = None
                text = mask(text, value)
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
        r"(?:(?i:aws)[\w.\-]{0,30}?(?i:secret|key)|SecretAccessKey)[\w.\-\"']{0,20}?\s*[:=]\s*[\"']?"
        r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
    ),
    ("bearer token", r"(?i:bearer)\s+[A-Za-z0-9._~+/\-]{16,}=*"),
]
_PROVIDER_RES = [(k, re.compile(r"(?<![A-Za-z0-9_\-])(?:" + p + ")")) for k, p in _PROVIDERS]
# The whole PEM block, body included, so its base64 is not reported again as high entropy.
_PRIVATE_KEY = lazy(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END[^-]*-----)?", re.S
)


def private_key_rule(text: str, found: dict[str, None]) -> str:
    """Private key PEM blocks, masked whole."""
    if "-----BEGIN " not in text:  # what the pattern starts with: most text need not compile it
        return text
    for match in _PRIVATE_KEY().finditer(text):
        found["private key"] = None
        text = text.replace(match.group(), MASK)
    return text


def provider_rule(text: str, found: dict[str, None]) -> str:
    """Provider token formats detect-secrets does not know (JWTs only when well formed)."""
    for kind, regex in _PROVIDER_RES:
        for match in regex.finditer(text):
            if kind == "JSON Web Token" and not is_jwt(match.group()):
                continue
            found[kind] = None
            text = mask(text, match.group())
    return text


# Any scheme (postgres, mysql, redis, amqp, mongodb+srv, https...) with user:password@host;
# the password runs to the last "@" of the authority, so "p@ss" inside it is kept whole.
_URL_CREDENTIALS = lazy(
    r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/?#@\x00]*:([^\s/?#\x00]+)@"
)


def url_rule(text: str, found: dict[str, None]) -> str:
    """Passwords in URLs (scheme://user:password@host) that are not placeholders."""
    if "://" not in text:
        return text
    for match in _URL_CREDENTIALS().finditer(text):
        if not is_placeholder(match.group(1)):
            found["URL credentials"] = None
            text = text.replace(match.group(1), MASK)
    return text
