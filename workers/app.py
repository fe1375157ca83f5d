"""The Celery app, configured for durability: SQL holds the state, messages are nudges."""

from __future__ import annotations

from typing import Any

from celery import Celery

from models.settings import Settings
from models.state_files import private_folder
from workers import names


def celery_config(settings: Settings) -> dict[str, Any]:
    """Settings that make a lost or repeated message harmless (see research/reliability.md)."""
    config: dict[str, Any] = {
        "broker_url": settings.resolved_broker_url,
        "task_serializer": "json",
        "accept_content": ["json"],
        "result_serializer": "json",
        "task_ignore_result": True,  # state lives in SQL
        "task_acks_late": True,  # tasks are idempotent nudges
        "task_reject_on_worker_lost": True,  # a killed child's task runs again
        "task_acks_on_failure_or_timeout": True,  # failures are handled in SQL, not redelivery
        "worker_prefetch_multiplier": 1,
        "task_soft_time_limit": 120,
        "task_time_limit": 180,
        "broker_connection_retry_on_startup": True,
        "task_default_queue": settings.queue,
        "worker_hijack_root_logger": False,
        "beat_schedule": {
            "sweep": {"task": names.SWEEP, "schedule": settings.sweep_interval},
        },
        # The schedule file is touched after every sweep sent: its age is beat's health.
        "beat_sync_every": 1,
    }
    if settings.embedded_broker:
        # A folder of message files: no server, several processes on one host, fanout (so
        # revokes work). Measured 8x the task rate of kombu's SQLite transport under load.
        folder = settings.broker_folder
        config["broker_transport"] = "workers.embedded_broker:Transport"
        config["broker_transport_options"] = {
            "data_folder_in": str(folder / "queue"),
            "data_folder_out": str(folder / "queue"),
            "control_folder": str(folder / "control"),
            "polling_interval": 0.1,
        }
    else:
        if settings.resolved_broker_url.startswith("redis://"):
            # kombu's, with a worker that outlives losing Redis mid-task (workers/redis_broker.py)
            config["broker_transport"] = "workers.redis_broker:Transport"
        config["broker_transport_options"] = {
            "visibility_timeout": 900,  # > task_time_limit; no long ETAs are ever used
            "socket_connect_timeout": 5,
            "socket_timeout": 30,
            "retry_on_timeout": True,
        }
    return config


def make_celery(settings: Settings, *, tasks: bool = True) -> Celery:
    """A Celery app bound to `settings`; nothing connects until a task is sent or consumed.
    Without `tasks` it only sends by name (beat): our task modules are not imported."""
    if settings.embedded_broker:
        private_folder(settings.home)  # before the broker's folders make it with the umask's mode
        for part in ("queue", "control"):  # the transport expects its folders to exist
            (settings.broker_folder / part).mkdir(parents=True, exist_ok=True)
    app = Celery("escalation", include=["workers.tasks"] if tasks else [])
    app.conf.update(celery_config(settings))
    app.escalation_settings = settings  # type: ignore[attr-defined]
    return app
