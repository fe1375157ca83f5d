"""detect-secrets' plugins, each module loaded only when a text could hold what it finds."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

# detect-secrets' names for its regex plugins -> ours (a plugin not listed keeps its own name).
KINDS = {
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
# Not used: its IP plugin (an IP is not a credential), its keyword plugin (tuned for quoted code
# assignments; ours reads prose) and its JWT regex (quadratic on "eyJeyJ..."; its check is kept).
UNUSED = {"Public IP (ipv4)", "Secret Keyword", "JSON Web Token"}
# Modules with no regex plugin we use, never scanned with: the IP and keyword ones are not even
# imported (the keyword one's regexes alone were a sixth of `escalate check`'s start); the JWT
# check and the entropy plugins load on their own when a rule needs them.
SKIPPED_MODULES = {"base", "ip_public", "keyword", "jwt", "high_entropy_strings"}

# What every regex of a plugin module needs in the text to match (detect-secrets 1.5.0): the
# module is imported, and its regexes compiled, only for a text holding one of these. Importing
# every plugin module was about 10 ms of a 73 ms `escalate check`, and most text holds none.
# Case-sensitive, as those regexes are; the modules in NEEDS_ANY_CASE hold re.IGNORECASE regexes
# and are looked for with that flag too, so a letter matches as it would there (ſ for s, K for k).
# The quadratic regexes (npm on many "//", OpenAI on "sk-sk-sk-...") run only with their literal,
# in bounded time. A module not listed is always loaded. tests/workflows/test_secret_plugins.py
# checks each entry against strings its regexes match.
NEEDS: dict[str, tuple[str, ...]] = {
    "artifactory": ("AKC", "AP"),
    "aws": ("A3T", "ABIA", "ACCA", "AKIA", "ASIA", "aws"),
    "azure_storage_key": ("AccountKey=",),
    "basic_auth": ("://",),
    "cloudant": ("cl",),
    "discord": (".",),
    "github_token": ("gh",),
    "gitlab_token": ("gl", "GR1348941"),
    "ibm_cloud_iam": ("key", "pwd", "pass", "token"),
    "ibm_cos_hmac": ("secret",),
    "mailchimp": ("-us",),
    "npm": ("_authToken",),
    "openai": ("T3BlbkFJ",),
    "private_key": ("BEGIN ", "PuTTY-User-Key-File-2"),
    "pypi_token": ("pypi-",),
    "sendgrid": ("SG.",),
    "slack": ("xox", "slack"),
    "softlayer": ("sl", "softlayer"),
    "square_oauth": ("sq0csp-",),
    "stripe": ("k_live_",),
    "telegram_token": (":",),
    "twilio": ("AC", "SK"),
}
NEEDS_ANY_CASE = {"aws", "cloudant", "ibm_cloud_iam", "ibm_cos_hmac", "slack", "softlayer"}


def may_match(module: str, text: str) -> bool:
    """Whether `text` holds something the plugin module's regexes need (see NEEDS)."""
    needs = NEEDS.get(module)
    if needs is None:
        return True
    if module in NEEDS_ANY_CASE:
        return _any_case(module).search(text) is not None
    return any(literal in text for literal in needs)


@cache
def _any_case(module: str) -> re.Pattern[str]:
    return re.compile("|".join(map(re.escape, NEEDS[module])), re.IGNORECASE)


@cache
def plugin_modules() -> tuple[str, ...]:
    """detect-secrets' plugin modules scanned with, in its own order; none imported yet."""
    import importlib
    import pkgutil

    # Not `from detect_secrets import plugins`: that reads the name from the package, which in
    # `escalate check` is a stand-in that would then import the whole package.
    package = importlib.import_module("detect_secrets.plugins")
    found = pkgutil.iter_modules(package.__path__)
    return tuple(module.name for module in found if module.name not in SKIPPED_MODULES)


@cache
def regex_plugins(module: str) -> tuple[tuple[str, Any], ...]:
    """The module's regex plugins we use, as (our kind, RegexBasedDetector), in its order."""
    from detect_secrets.plugins.base import RegexBasedDetector

    return tuple(
        (KINDS.get(name, name), cls())
        for name, cls in plugin_classes(module).items()
        if issubclass(cls, RegexBasedDetector) and name not in UNUSED
    )


def plugin_classes(module: str) -> dict[str, Any]:
    """A plugin module's built-in plugin classes by secret type, in its own (name) order."""
    import importlib
    import inspect

    from detect_secrets.plugins.base import BasePlugin

    loaded = importlib.import_module(f"detect_secrets.plugins.{module}")
    classes: dict[str, Any] = {}
    for name in dir(loaded):
        value = getattr(loaded, name)
        if (
            not name.startswith("_")
            and inspect.isclass(value)
            and issubclass(value, BasePlugin)
            and not inspect.isabstract(value)
        ):
            plugin: Any = value  # secret_type: a property on instances, text on classes
            classes[plugin.secret_type] = plugin
    return classes


@dataclass(frozen=True)
class EntropyScanner:
    """detect-secrets' entropy plugins and the filter for sequences, loaded once."""

    plugins: list[tuple[Any, re.Pattern[str]]]  # Base64/Hex plugin, its unquoted regex
    is_sequential: Callable[[str], bool]


@cache
def load_entropy() -> EntropyScanner:
    """The entropy plugins, loaded on the first call and kept."""
    from detect_secrets.filters.heuristic import is_sequential_string
    from detect_secrets.plugins.high_entropy_strings import HighEntropyStringsPlugin

    # Each entropy plugin with its own unquoted regex (non_quoted_string_regex) but not its
    # eager mode, which drops the entropy limit and flags every word.
    plugins = [
        (plugin, re.compile(f"[{re.escape(plugin.charset)}]+"))
        for plugin in (cls() for cls in plugin_classes("high_entropy_strings").values())
        if isinstance(plugin, HighEntropyStringsPlugin)
    ]
    return EntropyScanner(plugins, is_sequential_string)


def is_jwt(token: str) -> bool:
    """detect-secrets' check that a token is a well-formed JWT (its module loaded on first use)."""
    from detect_secrets.plugins.jwt import JwtTokenDetector

    return bool(JwtTokenDetector.is_formally_valid(token))
