"""`celery -A tests.support.held_task_app worker`: our app as deployed (ESCALATE_* settings),
with one more task that holds a pool slot, so a fault can land while a task is in flight."""

from __future__ import annotations

import time
from pathlib import Path

from models.settings import Settings
from workers.app import make_celery

app = make_celery(Settings())


@app.task(name="test.hold")
def hold(marks: str, name: str, seconds: float) -> None:
    """Write `<name>.started`, hold the slot `seconds`, then write `<name>.done`."""
    folder = Path(marks)
    (folder / f"{name}.started").touch()
    time.sleep(seconds)
    (folder / f"{name}.done").touch()
