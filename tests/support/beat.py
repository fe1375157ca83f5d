"""Celery beat in a test's own process, stopping as soon as it is told to."""

from __future__ import annotations

import threading
from pathlib import Path

from celery import Celery
from celery.beat import Service


class ThreadBeat(threading.Thread):
    """Beat's own scheduler (the app's schedule, the schedule file, a sync after each send)
    ticking in a thread. Celery's embedded beat sleeps out its whole interval before it sees
    a stop: up to a sweep interval (a second) in every live test's teardown. This one waits
    on its stop event instead."""

    def __init__(self, app: Celery, schedule_file: Path) -> None:
        super().__init__(name="Beat", daemon=True)
        self.app = app
        self.service = Service(app, schedule_filename=str(schedule_file))
        self._stopping = threading.Event()

    def run(self) -> None:
        self.app.set_current()
        scheduler = self.service.scheduler
        try:
            while not self._stopping.is_set():
                interval = scheduler.tick()
                if scheduler.should_sync():
                    scheduler._do_sync()
                self._stopping.wait(interval)
        finally:
            self.service.sync()

    def stop(self) -> None:
        self._stopping.set()
        self.join(timeout=30)
