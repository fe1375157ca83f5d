"""What a worker process needs, built once per app and process: settings, engine, design."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from celery import Celery
from sqlalchemy.engine import Engine

from models import state_files
from models.db import make_engine
from models.design_file import load_design
from models.settings import Settings
from workers.channels import ChannelBook, dev_apprise_config
from workers.outbound import policy_for
from workflows.design import Design
from workflows.outbound import OutboundPolicy


@dataclass
class Runtime:
    """Process-wide resources; rebuilt after a fork so no connection crosses processes."""

    settings: Settings
    pid: int
    app: Celery

    @cached_property
    def engine(self) -> Engine:
        return make_engine(self.settings)

    @cached_property
    def design(self) -> Design:
        return load_design(self.settings.design_path)

    # What every intake stores of the design: made once (a dump and a hash were 1.5 % of a case).
    @cached_property
    def design_json(self) -> dict[str, Any]:
        return self.design.model_dump(mode="json")

    @cached_property
    def design_hash(self) -> str:
        return self.design.content_hash

    @cached_property
    def channels(self) -> ChannelBook:
        config = self.settings.apprise_config
        if config is None:
            config = dev_apprise_config(self.settings, design_tags(self.design))
        return ChannelBook(config, key=self.answer_key)

    @cached_property
    def answer_key(self) -> str:
        return self.settings.answer_key or state_files.answer_key(self.settings.home)

    @cached_property
    def outbound(self) -> OutboundPolicy:
        """Where runs' webhooks and http probes may lead (ESCALATE_OUTBOUND_ALLOW)."""
        return policy_for(self.settings)

    @cached_property
    def webhook_secret(self) -> str:
        return self.settings.webhook_secret or state_files.webhook_secret(self.settings.home)


def design_tags(design: Design) -> set[str]:
    """Every apprise tag the design routes to."""
    tags: set[str] = set()
    for severity in ("low", "medium", "high", "critical"):
        tier = design.tier(severity)
        tags |= {tier.recipient.primary, *tier.recipient.copies}
        for level in tier.chain.levels if tier.chain else ():
            tags |= set(level.recipients)
    return tags


_lock = threading.Lock()


def runtime_for(app: Celery) -> Runtime:
    """The runtime of a Celery app's current settings (or anything carrying
    `escalation_settings`): rebuilt after a fork or when the app is given other settings."""
    with _lock:
        current: Runtime | None = getattr(app, "_escalation_runtime", None)
        settings: Settings = app.escalation_settings
        if current is None or current.pid != os.getpid() or current.settings is not settings:
            current = Runtime(settings=settings, pid=os.getpid(), app=app)
            app._escalation_runtime = current
        return current
