"""`celery -A workers.beat_app beat`: the app beat sends the sweep with, by task name.

Beat runs no task, so this app imports none of our task modules: they cost a beat process
about 1.2 s of CPU at every start. `-A workers.celery_app beat` works too, only slower.
"""

from __future__ import annotations

from models.settings import Settings
from workers.app import make_celery

app = make_celery(Settings(), tasks=False)
