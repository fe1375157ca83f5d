"""Secrets known by their format: detect-secrets' plugins, provider tokens, keys, URL passwords."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

# --- shared by every rule: the mask, placeholders, base64 text -----------------------------

# Stands in for a value once found, so later rules neither report it twice nor read the next
# word as its value; no rule's character class contains it.
MASK = "\x00"


def mask(text: str, value: str) -> str:
    """`text` with `value` masked, and the rest of its token (e.g. a signature past the match)."""
    return re.sub(re.escape(value) + r"[\w\-+/=.~]*", MASK, text)


# Placeholders are not secrets: masked (***, xxx), templated (<pw>, ${X}, $X, {{ x }}, %(x)s),
# redacted, and documentation stand-ins. Well-known defaults ("changeme") count as stand-ins:
# they leak nothing, and refusing them would teach people to dodge the check.
_PLACEHOLDER = re.compile(
    r"""[*x•#.]{3,}|<[^<>]*>|\$\{[^}]*\}|\$\(.*\)|\$\w+|\{\{.*\}\}|\{[\w.\s]*\}|%\(\w+\)s|%s
    |[(\[]?(?:redacted|hidden|masked|filtered|removed|omitted|secret|password|changeme
    |example|placeholder|dummy|none|null|nil|undefined|empty|unset|your[_\-]?\w*)[)\]]?""",
    re.I | re.X,
)


def is_placeholder(value: str) -> bool:
    """Whether a value is a stand-in (***, <pw>, ${X}, changeme...) rather than a secret."""
    return _PLACEHOLDER.fullmatch(value.strip("\"'`")) is not None


def decode(value: str) -> str:
    """The text a base64 value encodes, or "" when it does not encode printable text."""
    try:
        text = base64.b64decode(value + "=" * (-len(value) % 4), altchars=b"-_").decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return ""
    return text if all(c.isprintable() or c in "\t\r\n" for c in text) else ""


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
# The modules of the unused IP and keyword plugins are not even imported: the keyword one's
# regexes alone were a sixth of `escalate check`'s start. (The JWT module holds its check.)
_UNUSED_MODULES = {"ip_public", "keyword"}
# These regexes backtrack quadratically on long runs ("sk-sk-sk-...", many "//" on one line) but
# each needs a literal: skipping them when it is absent finds the same, in bounded time.
_PLUGIN_NEEDS = {"NPM tokens": "_authToken", "OpenAI Token": "T3BlbkFJ"}


@dataclass(frozen=True)
class Scanner:
    """The detect-secrets pieces we use, loaded once."""

    plugins: list[tuple[str, str, Any]]  # (needed literal, our kind, RegexBasedDetector)
    entropy_plugins: list[tuple[Any, re.Pattern[str]]]  # Base64/Hex plugin, its unquoted regex
    is_sequential: Callable[[str], bool]
    is_jwt: Callable[[str], bool]


@cache
def load_scanner() -> Scanner:
    """The detect-secrets pieces, loaded on the first call and kept."""
    # Loaded on first scan, not with this module: detect-secrets imports requests (~100 ms).
    from detect_secrets.filters.heuristic import is_sequential_string
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.high_entropy_strings import HighEntropyStringsPlugin
    from detect_secrets.plugins.jwt import JwtTokenDetector

    classes = _plugin_classes()
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
    return Scanner(plugins, entropy, is_sequential_string, JwtTokenDetector.is_formally_valid)


def _plugin_classes() -> dict[str, Any]:
    """detect-secrets' built-in plugin classes by secret type, in its own (module, name) order."""
    import importlib
    import inspect
    import pkgutil

    from detect_secrets import plugins as package
    from detect_secrets.plugins.base import BasePlugin

    classes: dict[str, Any] = {}
    for found in pkgutil.iter_modules(package.__path__):
        if found.name in _UNUSED_MODULES:
            continue
        module = importlib.import_module(f"{package.__name__}.{found.name}")
        for name in dir(module):
            value = getattr(module, name)
            if (
                not name.startswith("_")
                and inspect.isclass(value)
                and issubclass(value, BasePlugin)
                and not inspect.isabstract(value)
            ):
                plugin: Any = value  # secret_type: a property on instances, text on classes
                classes[plugin.secret_type] = plugin
    return classes


def plugin_rule(text: str, found: dict[str, None]) -> str:
    """What detect-secrets' regex plugins find (placeholder URL passwords aside)."""
    for needed, kind, plugin in load_scanner().plugins:
        if needed not in text:
            continue
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
_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END[^-]*-----)?", re.S
)


def private_key_rule(text: str, found: dict[str, None]) -> str:
    """Private key PEM blocks, masked whole."""
    for match in _PRIVATE_KEY.finditer(text):
        found["private key"] = None
        text = text.replace(match.group(), MASK)
    return text


def provider_rule(text: str, found: dict[str, None]) -> str:
    """Provider token formats detect-secrets does not know (JWTs only when well formed)."""
    for kind, regex in _PROVIDER_RES:
        for match in regex.finditer(text):
            if kind == "JSON Web Token" and not load_scanner().is_jwt(match.group()):
                continue
            found[kind] = None
            text = mask(text, match.group())
    return text


# Any scheme (postgres, mysql, redis, amqp, mongodb+srv, https...) with user:password@host;
# the password runs to the last "@" of the authority, so "p@ss" inside it is kept whole.
_URL_CREDENTIALS = re.compile(
    r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/?#@\x00]*:([^\s/?#\x00]+)@"
)


def url_rule(text: str, found: dict[str, None]) -> str:
    """Passwords in URLs (scheme://user:password@host) that are not placeholders."""
    for match in _URL_CREDENTIALS.finditer(text):
        if not is_placeholder(match.group(1)):
            found["URL credentials"] = None
            text = text.replace(match.group(1), MASK)
    return text
