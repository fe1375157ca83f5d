"""One JSON POST to a chat platform's API, its failures translated to a send outcome.

The URL may hold a credential (Telegram's bot token is in its path): it is never logged or
put in an error; `name` says which channel it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from workers.outbound import tls
from workflows.stage_results import DeliveryState


@dataclass(frozen=True)
class Posted:
    """What the platform answered: the delivery state, its JSON, and why when it failed."""

    state: DeliveryState
    data: Mapping[str, Any]
    error: str | None = None


def post_json(
    url: str,
    body: Mapping[str, Any],
    *,
    name: str,
    timeout: float,
    headers: Mapping[str, str] | None = None,
) -> Posted:
    """POST `body`; SENT on a 2xx whose JSON does not say ok=false, UNKNOWN on a timeout
    (it may have arrived), FAILED otherwise (worth another try later)."""
    try:
        response = httpx.post(
            url, json=dict(body), headers=dict(headers or {}), timeout=timeout, verify=tls()
        )
    except httpx.TimeoutException:
        return Posted(DeliveryState.UNKNOWN, {}, f"{name}: no answer within {timeout:g}s")
    except httpx.HTTPError as exc:
        return Posted(DeliveryState.FAILED, {}, f"{name}: {type(exc).__name__}")
    try:
        data = response.json()
    except ValueError:
        data = {}
    data = data if isinstance(data, dict) else {}
    if not response.is_success or data.get("ok") is False:
        said = data.get("error") or data.get("description") or ""
        reason = f"{name}: HTTP {response.status_code} {str(said)[:200]}".rstrip()
        return Posted(DeliveryState.FAILED, data, reason)
    return Posted(DeliveryState.SENT, data)
