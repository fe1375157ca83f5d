"""An agent's own Celery worker, as an agent writes one: it never imports the service.

Run by tests with a Python that has only celery installed (tests/support/agent_venv.py), from
a folder holding nothing but this file, so nothing of ours is importable:

    AGENT_BROKER_URL=... AGENT_QUEUE=... AGENT_WAKES=wakes.jsonl \\
        python -m celery -A agent_worker worker -Q "$AGENT_QUEUE" --pool solo

Every wake task received is appended to AGENT_WAKES as one JSON line, with the queue it came
on. AGENT_BROKER_OPTIONS (JSON) carries transport options, e.g. a broker folder's paths.
"""

from __future__ import annotations

import json
import os
from typing import Any

from celery import Celery

app = Celery("agent", broker=os.environ["AGENT_BROKER_URL"])
app.conf.update(
    broker_transport_options=json.loads(os.environ.get("AGENT_BROKER_OPTIONS") or "{}"),
    task_default_queue=os.environ["AGENT_QUEUE"],
    accept_content=["json"],
    task_ignore_result=True,
    worker_hijack_root_logger=False,
)


@app.task(name=os.environ.get("AGENT_WAKE_TASK", "agent.wake"), bind=True)
def wake(self: Any, wake: dict[str, Any]) -> None:
    """The service's wake-up: the decision, as the run is told it."""
    queue = (self.request.delivery_info or {}).get("routing_key")
    with open(os.environ["AGENT_WAKES"], "a", encoding="utf-8") as wakes:
        wakes.write(json.dumps({"queue": queue, "wake": wake}) + "\n")
