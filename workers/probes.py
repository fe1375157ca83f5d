"""Reading a state fingerprint: a git work tree, a file's sha256, an HTTP value, or none."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from workers.git_tree import git_fingerprint
from workflows.errors import ProbeError

PROBE_TIMEOUT = 10.0


def _file(path: str) -> str:
    try:
        return "sha256:" + hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as exc:
        raise ProbeError(f"cannot read {path}: {exc.strerror}") from None


def _http(url: str) -> str:
    try:
        response = httpx.get(url, timeout=PROBE_TIMEOUT, follow_redirects=True)
    except httpx.HTTPError as exc:
        raise ProbeError(f"GET {url}: {type(exc).__name__}") from None
    if response.status_code >= 400:
        raise ProbeError(f"GET {url}: HTTP {response.status_code}")
    text = response.text.strip()
    # Short values are shown as they are, so "changed from X to Y" is readable.
    if len(text) <= 80 and "\n" not in text:
        return text
    return "sha256:" + hashlib.sha256(response.content).hexdigest()


def read_fingerprint(spec: Mapping[str, Any] | None) -> str | None:
    """The current value of a fingerprint spec; None for kind none. Raises ProbeError only:
    a missing git binary or a hanging probe must not crash (and dead-letter) the stage."""
    try:
        return _read(spec)
    except ProbeError:
        raise
    except (OSError, KeyError, ValueError) as exc:
        raise ProbeError(f"{type(exc).__name__}: {exc}"[:300]) from None


def _read(spec: Mapping[str, Any] | None) -> str | None:
    if not spec:
        return None
    kind = spec.get("kind", "none")
    if kind == "none":
        return None
    if kind == "git":
        return git_fingerprint(str(spec.get("path", ".")))
    if kind == "file":
        return _file(str(spec["path"]))
    if kind == "http":
        return _http(str(spec["url"]))
    raise ProbeError(f"unknown fingerprint kind {kind!r} (use git, file, http or none)")
