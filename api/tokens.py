"""Who holds which token: parsed from ESCALATE_API_TOKENS or generated into the state folder.

No web framework here: `escalate serve` and the CLI read tokens without loading FastAPI
(about 0.3 s of CPU a process); api/auth.py turns a holder into a request's dependency.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass

from models import state_files
from models.settings import Settings
from workflows.errors import ConfigError

ROLES = ("agent", "operator", "admin")


@dataclass(frozen=True)
class Holder:
    """Who holds a token: its role, and the name bound to it in the configuration."""

    role: str
    name: str = ""

    @property
    def identity(self) -> str:
        """The token's name (or its role when none is bound): 'ana' answers as api:ana."""
        return self.name or self.role


def parse_holders(text: str) -> dict[str, Holder]:
    """'agent:abc,operator:def:ana' → {token: Holder}; ConfigError names the bad entry."""
    holders: dict[str, Holder] = {}
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        role, sep, rest = entry.partition(":")
        token, _, name = rest.partition(":")
        name = name.strip()
        if not sep or role not in ROLES or not token or (name and not _NAME.fullmatch(name)):
            raise ConfigError(
                f"ESCALATE_API_TOKENS: entry {entry.split(':')[0]!r}... must be "
                f"role:token[:name] with role one of {', '.join(ROLES)} and a name of "
                "letters, digits, . _ - (at most 40)"
            )
        holders[token] = Holder(role, name)
    return holders


_NAME = re.compile(r"[A-Za-z0-9._-]{1,40}")


def parse_tokens(text: str) -> dict[str, str]:
    """'agent:abc,operator:def' → {token: role}; raises ConfigError naming the bad entry."""
    return {token: holder.role for token, holder in parse_holders(text).items()}


def load_holders(settings: Settings) -> dict[str, Holder]:
    """Tokens from settings, or generated into the state folder: {token: Holder}."""
    if settings.api_tokens:
        return parse_holders(settings.api_tokens)
    return {token: Holder(role) for role, token in state_files.api_tokens(settings.home).items()}


def load_tokens(settings: Settings) -> dict[str, str]:
    """Tokens from settings, or generated into the state folder: {token: role}."""
    return {token: holder.role for token, holder in load_holders(settings).items()}


def holder_of(holders: Mapping[str, Holder], presented: str) -> Holder | None:
    """The holder of a presented token, compared in constant time against each known one."""
    found = None
    for token, holder in holders.items():
        if hmac.compare_digest(token.encode(), presented.encode()):
            found = holder
    return found
