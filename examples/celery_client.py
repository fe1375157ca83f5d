"""An agent with only celery installed: raise by name, be woken on its own queue.

Raise: `python celery_client.py packet.json` (recipient and waiting may be left to the design).
Wake: `celery -A celery_client worker -Q my-agent` runs the worker that receives the decision.
"""

import json
import os
import sys

from celery import Celery

app = Celery("my-agent", broker=os.environ.get("BROKER_URL", "redis://127.0.0.1:6379/0"))
AGENT_QUEUE = os.environ.get("AGENT_QUEUE", "my-agent")  # the queue our own worker consumes


@app.task(name="my.wake")
def wake(wake: dict) -> None:
    """Sent once the case closes: outcome, option, decided_by, resumes (README)."""
    with open("wakes.jsonl", "a") as wakes:
        wakes.write(json.dumps(wake) + "\n")


if __name__ == "__main__":
    with open(sys.argv[1]) as packet_file:
        packet = json.load(packet_file)
    sent = app.send_task(
        "escalation.escalate",
        queue=os.environ.get("ESCALATE_QUEUE", "escalation"),  # the service's queue
        kwargs={"packet": packet, "wake": {"task": "my.wake", "queue": AGENT_QUEUE}},
    )
    print(sent.id)
