"""`celery -A workers.celery_app worker|beat`: the app built from ESCALATE_* settings."""

from __future__ import annotations

from models.settings import Settings
from workers.app import make_celery

app = make_celery(Settings())
