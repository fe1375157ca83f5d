"""kandev's side: a blocked task's wake-up, handed to its agent as kandev hands it over.

Run `celery -A kandev_wake worker -Q kandev` with KANDEV_AGENT set to the agent's command, and
link blockers with `"wake": {"task": "kandev.wake", "queue": "kandev"}`. Once the task's last
blocker is resolved the agent runs with KANDEV_WAKE_REASON=task_blockers_resolved and
KANDEV_WAKE_PAYLOAD_JSON: task_id, resolved_blocker_ids, and each blocker's title and decision.
Once the agent has run, the wake is acknowledged (its `ack`): a wake nobody acknowledges is
sent again, then its blockers show "decided, not resumed" (README, proof the run resumed).
"""

import json
import os
import shlex
import subprocess

from celery import Celery

app = Celery("kandev", broker=os.environ.get("BROKER_URL", "redis://127.0.0.1:6379/0"))


@app.task(name="kandev.wake")
def wake(wake: dict) -> None:
    """Run the task's agent once, with the wake reason and payload in kandev's variables."""
    env = {
        **os.environ,
        "KANDEV_TASK_ID": wake["task_id"],
        "KANDEV_WAKE_REASON": wake["reason"],
        "KANDEV_WAKE_PAYLOAD_JSON": json.dumps(wake),
    }
    subprocess.run(shlex.split(os.environ["KANDEV_AGENT"]), env=env, check=True)
    ack = wake["ack"]  # the agent took the decisions: say so, by task name
    app.send_task(ack["task"], args=ack["args"], queue=ack["queue"])
