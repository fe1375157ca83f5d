"""The state folder and the small generated secrets kept in it (API tokens, keys).

The folder is made 0700 and every file of ours in it 0600: it holds the keys, the tokens,
the SQLite database and the local inbox.
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
from pathlib import Path


def private_folder(path: Path) -> Path:
    """`path` as a folder, created 0700 when it is new (missing parents as `mkdir -p` makes
    them); an existing folder is left as it is."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def private_file(path: Path) -> Path:
    """`path` created empty and 0600 when it is new; an existing file is left as it is."""
    private_folder(path.parent)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    return path


def write_private(path: Path, text: str) -> None:
    """Replace `path`'s content; the file is 0600 whatever it was before."""
    private_folder(path.parent)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:  # mkstemp makes it 0600
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _create_once(path: Path, text: str) -> str:
    """Write `text` to `path` unless it exists; return what the file holds either way.

    The file is filled under a unique name and linked into place, which fails if another
    process got there first: every process then reads the one winner.
    """
    private_folder(path.parent)
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
