"""How a chaos run raises and answers: over HTTP and by task name, as agents and operators do."""

from __future__ import annotations

import json
import os
import secrets
from typing import Any

import httpx
from celery import Celery

from tests.chaos.auditor import Audit
from tests.chaos.cluster import AGENT_TOKEN, OPERATOR_TOKEN, Cluster
from workflows.examples import valid_packet

WAITING = {"low": "safe_subset", "medium": "read_only", "high": "paused", "critical": "stopped"}


def run_prefix(fault: str) -> str:
    """A run-id prefix of this fault's own: the auditor looks at these cases only."""
    return f"chaos-{fault}-{secrets.token_hex(3)}"


def packet(run_id: str, index: int, *, severity: str = "low", **changes: Any) -> dict[str, Any]:
    """A valid packet with a question of its own (the same one from one run would join)."""
    return {
        **valid_packet(),
        "run_id": run_id,
        "packet_id": f"esc-{index}",
        "severity": severity,
        "waiting_behavior": WAITING[severity],
        "blocked_on": f"The records of batch {index}.",
        **changes,
    }


def request(cluster: Cluster, body: dict[str, Any]) -> dict[str, Any]:
    """A raise's request: the run is woken through the agent's own worker."""
    return {"packet": body, "wake": cluster.agent.wake_spec}


def raise_http(client: httpx.Client, cluster: Cluster, body: dict[str, Any]) -> httpx.Response:
    return client.post(
        f"{cluster.api_url}/v1/escalations",
        json=request(cluster, body),
        headers={"Authorization": f"Bearer {AGENT_TOKEN}"},
        timeout=30,
    )


def agent_celery(cluster: Cluster) -> Celery:
    """An agent's bare Celery app (nothing of ours configured) on the service's broker."""
    app = Celery("agent", broker=cluster.settings.resolved_broker_url)
    app.conf.broker_connection_retry_on_startup = True
    return app


def raise_by_name(app: Celery, cluster: Cluster, body: dict[str, Any]) -> None:
    app.send_task(
        "escalation.escalate", kwargs=request(cluster, body), queue=cluster.settings.queue
    )


def reply_http(
    client: httpx.Client, cluster: Cluster, case_id: str, option: str, sender: str
) -> httpx.Response:
    return client.post(
        f"{cluster.api_url}/v1/escalations/{case_id}/replies",
        json={"option": option, "sender": sender},
        headers={"Authorization": f"Bearer {OPERATOR_TOKEN}"},
        timeout=60,
    )


def report(audit: Audit) -> None:
    """Print the figures; with CHAOS_FIGURES set, append them there (docs/RELIABILITY.md)."""
    figures = audit.figures()
    print(json.dumps(figures))
    if path := os.environ.get("CHAOS_FIGURES"):
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(figures) + "\n")


def seed_secret(client: httpx.Client, app: Celery, cluster: Cluster, run_id: str) -> str:
    """Raise a packet carrying a fresh cloud key, over HTTP and by name: both are refused,
    and the auditor then looks for the key everywhere it must never be."""
    key = "AKIA" + "".join(secrets.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16))
    cluster.seeded.append(key)  # before it is sent: once sent, it must be looked for
    body = packet(run_id, 900, trigger_detail=f"deploy failed with key {key}")
    refused = raise_http(client, cluster, body)
    assert refused.status_code == 422 and key not in refused.text, refused.text
    raise_by_name(app, cluster, {**body, "packet_id": "esc-901"})
    return key
