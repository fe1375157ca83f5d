"""`celery -A workers.celery_app worker`: the app built from ESCALATE_* settings (beat uses
workers.beat_app, which imports no task)."""

from __future__ import annotations

from models.settings import Settings
from workers.app import make_celery

app = make_celery(Settings())
