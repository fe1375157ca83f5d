"""Telling the run its decision: a Celery task sent by name, or a signed HTTP webhook."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any

import httpx
from celery import Celery

from workers import outbound
from workers.channels import FAILED, REFUSED, SENT, UNKNOWN, SendOutcome
from workflows.outbound import OutboundPolicy

SIGNATURE_HEADER = "X-Escalate-Signature"
TIMESTAMP_HEADER = "X-Escalate-Timestamp"


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """HMAC-SHA256 over `timestamp.body`, so a captured request cannot be replayed later."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + digest.hexdigest()


def verify(secret: str, timestamp: str, body: bytes, signature: str) -> bool:
    """What a run does on receipt: recompute and compare in constant time."""
    return hmac.compare_digest(sign(secret, timestamp, body), signature)


def post_webhook(
    url: str,
    payload: Mapping[str, Any],
    *,
    secret: str,
    timeout: float,
    policy: OutboundPolicy,
) -> SendOutcome:
    """POST the signed decision where the allow-list lets it go; the outcome keeps only the
    answer's status class, never its text (the run reads the outcome back)."""
    body = json.dumps(payload, sort_keys=True).encode()
    timestamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        TIMESTAMP_HEADER: timestamp,
        SIGNATURE_HEADER: sign(secret, timestamp, body),
    }
    try:
        with outbound.request(
            "POST", url, policy=policy, timeout=timeout, content=body, headers=headers
        ) as response:
            status = response.status_code
    except outbound.OutboundRefused as exc:  # checked at intake; the name may resolve anew
        return SendOutcome(REFUSED, f"webhook: {exc}"[:500])
    except httpx.TimeoutException:
        return SendOutcome(UNKNOWN, f"webhook gave no answer within {timeout:g}s")
    except httpx.HTTPError as exc:
        return SendOutcome(FAILED, f"webhook: {type(exc).__name__}")
    if 200 <= status < 300:
        return SendOutcome(SENT)
    unfollowed = " (redirects are not followed)" if 300 <= status < 400 else ""
    return SendOutcome(FAILED, f"webhook answered HTTP {status // 100}xx{unfollowed}")


def send_wake_task(
    app: Celery, name: str, payload: Mapping[str, Any], *, queue: str
) -> SendOutcome:
    """Send the run's wake task on the run's own queue: on ours, our workers would discard it
    as unregistered. Sent means the broker took it; the run's worker may not be up yet."""
    try:
        app.send_task(name, kwargs={"wake": dict(payload)}, queue=queue)
    except Exception as exc:  # the broker's many failure types all mean "not sent"
        return SendOutcome(FAILED, f"send_task {name}: {type(exc).__name__}: {exc}"[:300])
    return SendOutcome(SENT)
