"""Small generated secrets kept in the state folder (API tokens, the webhook key)."""

from __future__ import annotations

import json
import os
import secrets
import tempfile
from pathlib import Path


def _create_once(path: Path, text: str) -> str:
    """Write `text` to `path` unless it exists; return what the file holds either way.

    The file is filled under a unique name and linked into place, which fails if another
    process got there first: every process then reads the one winner.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:  # mkstemp makes it 0600
                handle.write(text)
            os.link(temporary, path)
        except FileExistsError:
            pass
        finally:
            os.unlink(temporary)
    return path.read_text(encoding="utf-8")


def answer_key(home: Path) -> str:
    """The key that derives correlation tokens and signs answer links; made on first use."""
    return _create_once(home / "answer-key", secrets.token_urlsafe(32)).strip()


def webhook_secret(home: Path) -> str:
    """The key that signs wake-up webhooks; made on first use."""
    return _create_once(home / "webhook-secret", secrets.token_urlsafe(32)).strip()


def api_tokens(home: Path) -> dict[str, str]:
    """Generated bearer tokens by role (agent, operator, admin); made on first use."""
    tokens = {role: secrets.token_urlsafe(24) for role in ("agent", "operator", "admin")}
    loaded: dict[str, str] = json.loads(_create_once(home / "tokens.json", json.dumps(tokens)))
    return loaded


def inbox_token(home: Path) -> str:
    """The token the embedded local inbox takes (its apprise URL's password); made on first use."""
    return _create_once(home / "inbox-token", secrets.token_urlsafe(24)).strip()
