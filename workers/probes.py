"""Reading a state fingerprint: a git work tree, a file's sha256, an HTTP body's sha256, or none.

Nothing a probed server answers is shown to the run: only a digest of the body, or the status
class when it is not a success."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from workers import outbound
from workers.git_tree import git_fingerprint
from workflows.errors import ProbeError
from workflows.outbound import OutboundPolicy

PROBE_TIMEOUT = 10.0
PROBE_MAX_BYTES = 16 * 1024 * 1024


def _file(path: str) -> str:
    try:
        return "sha256:" + hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as exc:
        raise ProbeError(f"cannot read {path}: {exc.strerror}") from None


def _http(url: str, policy: OutboundPolicy) -> str:
    digest, size = hashlib.sha256(), 0
    deadline = time.monotonic() + PROBE_TIMEOUT * 3  # a body that trickles in still ends
    try:
        with outbound.request("GET", url, policy=policy, timeout=PROBE_TIMEOUT) as response:
            if not response.is_success:
                unfollowed = " (redirects are not followed)" if response.is_redirect else ""
                raise ProbeError(f"GET {url}: HTTP {response.status_code // 100}xx{unfollowed}")
            for chunk in response.iter_bytes():
                digest.update(chunk)
                size += len(chunk)
                if size > PROBE_MAX_BYTES or time.monotonic() > deadline:
                    raise ProbeError(f"GET {url}: the body is too large or too slow to read")
    except outbound.OutboundRefused as exc:
        raise ProbeError(f"GET {url}: {exc}") from None
    except httpx.HTTPError as exc:
        raise ProbeError(f"GET {url}: {type(exc).__name__}") from None
    return "sha256:" + digest.hexdigest()


def read_fingerprint(
    spec: Mapping[str, Any] | None, *, policy: OutboundPolicy | None = None
) -> str | None:
    """The current value of a fingerprint spec; None for kind none. Raises ProbeError only:
    a missing git binary or a hanging probe must not crash (and dead-letter) the stage.
    `policy` says where an http probe may lead; without one, public addresses only."""
    try:
        return _read(spec, policy or OutboundPolicy())
    except ProbeError:
        raise
    except (OSError, KeyError, ValueError) as exc:
        raise ProbeError(f"{type(exc).__name__}: {exc}"[:300]) from None


def _read(spec: Mapping[str, Any] | None, policy: OutboundPolicy) -> str | None:
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
        return _http(str(spec["url"]), policy)
    raise ProbeError(f"unknown fingerprint kind {kind!r} (use git, file, http or none)")
