"""Small generated secrets kept in the state folder (API tokens, the webhook key)."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(temporary, path)  # atomic: two processes starting at once agree on one value


def webhook_secret(home: Path) -> str:
    """The key that signs wake-up webhooks; made on first use."""
    path = home / "webhook-secret"
    if not path.exists():
        _write_private(path, secrets.token_urlsafe(32))
    return path.read_text(encoding="utf-8").strip()


def api_tokens(home: Path) -> dict[str, str]:
    """Generated bearer tokens by role (agent, operator, admin); made on first use."""
    path = home / "tokens.json"
    if not path.exists():
        tokens = {role: secrets.token_urlsafe(24) for role in ("agent", "operator", "admin")}
        _write_private(path, json.dumps(tokens, indent=2))
    loaded: dict[str, str] = json.loads(path.read_text(encoding="utf-8"))
    return loaded
