"""The embedded demo's local channel: apprise posts here (json://) when no channels are set."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.security import HTTPBasic, HTTPBasicCredentials

from api.deps import RuntimeDep
from api.schemas import InboxNotification
from models.state_files import inbox_token
from workers.channels import dev_inbox_path
from workers.inbound.common import same_secret
from workflows.errors import InboundRejected, Rejection

router = APIRouter(include_in_schema=False)
_basic = HTTPBasic(auto_error=False)


@router.post("/v1/dev/inbox")
def dev_inbox(
    body: InboxNotification,
    runtime: RuntimeDep,
    credentials: Annotated[HTTPBasicCredentials | None, Depends(_basic)],
) -> dict[str, str]:
    """Store one notification; `escalate inbox` prints what arrived. The generated apprise
    config carries the inbox's token as its password."""
    expected = inbox_token(runtime.settings.home)
    if credentials is None or not same_secret(expected, credentials.password):
        raise InboundRejected("the local inbox takes its token", why=Rejection.NOT_GENUINE)
    record = {"received_at": datetime.now(UTC).isoformat(), **body.model_dump(exclude_none=True)}
    path = dev_inbox_path(runtime.settings)
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(descriptor, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
    return {"status": "stored"}
