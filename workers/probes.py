"""Reading a state fingerprint: a git work tree, a file's sha256, an HTTP value, or none."""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

PROBE_TIMEOUT = 10.0


class ProbeError(Exception):
    """The fingerprint could not be read."""


# A repository's own config can name programs git runs (fsmonitor, hooks, diff drivers,
# textconv): the probe reads a run's tree, so none of them may run in the worker.
GIT_SAFE = ("-c", "core.fsmonitor=", "-c", "core.hooksPath=/dev/null", "-c", "diff.external=")
GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0"}


def _git(path: str) -> str:
    def run(*args: str) -> bytes:
        done = subprocess.run(
            ["git", *GIT_SAFE, "-C", path, *args],
            capture_output=True,
            timeout=PROBE_TIMEOUT,
            check=False,
            env={**os.environ, **GIT_ENV},
        )
        if done.returncode != 0:
            raise ProbeError(
                f"git {args[0]} failed in {path}: "
                f"{done.stderr.decode(errors='replace').strip()[:200]}"
            )
        return done.stdout

    head = run("rev-parse", "HEAD").decode().strip()
    status = run("status", "--porcelain")
    tree = hashlib.sha256(
        status + run("diff", "--no-ext-diff", "--no-textconv", "HEAD")
    ).hexdigest()
    return f"{head}+{tree[:16]}"


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
    except (OSError, subprocess.SubprocessError, KeyError, ValueError) as exc:
        raise ProbeError(f"{type(exc).__name__}: {exc}"[:300]) from None


def _read(spec: Mapping[str, Any] | None) -> str | None:
    if not spec:
        return None
    kind = spec.get("kind", "none")
    if kind == "none":
        return None
    if kind == "git":
        return _git(str(spec.get("path", ".")))
    if kind == "file":
        return _file(str(spec["path"]))
    if kind == "http":
        return _http(str(spec["url"]))
    raise ProbeError(f"unknown fingerprint kind {kind!r} (use git, file, http or none)")
