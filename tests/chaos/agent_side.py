"""The run's side, as an agent writes it with only celery installed: it never imports the
service. Each wake is appended to AGENT_WAKES as one JSON line, then acknowledged over HTTP
with the token the wake carried (POST ack.url?token=...), as README "Proof the run resumed"
tells a run to. An ack that fails is left to the service's redelivery of the wake.

    AGENT_BROKER_URL=... AGENT_QUEUE=... AGENT_WAKES=wakes.jsonl \\
        python -m celery -A agent_side worker -Q "$AGENT_QUEUE" --pool threads
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from celery import Celery

app = Celery("agent", broker=os.environ["AGENT_BROKER_URL"])
app.conf.update(
    task_default_queue=os.environ["AGENT_QUEUE"],
    accept_content=["json"],
    task_ignore_result=True,
    worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=True,
)
written = threading.Lock()


def record(line: dict[str, Any]) -> None:
    with written, open(os.environ["AGENT_WAKES"], "a", encoding="utf-8") as wakes:
        wakes.write(json.dumps(line) + "\n")


def acknowledge(ack: dict[str, Any]) -> int | str:
    url = f"{ack['url']}?{urllib.parse.urlencode({'token': ack['token']})}"
    for _ in range(5):
        try:
            with urllib.request.urlopen(urllib.request.Request(url, method="POST"), timeout=5):
                return 200
        except urllib.error.HTTPError as exc:
            if exc.code < 500:
                return exc.code
            status: int | str = exc.code
        except OSError as exc:
            status = type(exc).__name__
        time.sleep(0.5)
    return status


@app.task(name=os.environ.get("AGENT_WAKE_TASK", "agent.wake"))
def wake(wake: dict[str, Any]) -> None:
    """The service's wake-up: record it, then say the run took it."""
    record({"wake": wake, "at": time.time()})
    ack = wake.get("ack") or {}
    if ack.get("url") and ack.get("token"):
        record({"ack": wake.get("wake_id"), "status": acknowledge(ack), "at": time.time()})
