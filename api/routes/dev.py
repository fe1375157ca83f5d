"""The embedded demo's local channel: apprise posts here (json://) when no channels are set."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from fastapi import APIRouter

from api.deps import RuntimeDep
from api.schemas import InboxNotification
from workers.channels import dev_inbox_path

router = APIRouter(include_in_schema=False)


@router.post("/v1/dev/inbox")
def dev_inbox(body: InboxNotification, runtime: RuntimeDep) -> dict[str, str]:
    """Store one notification; `escalate inbox` prints what arrived."""
    record = {"received_at": datetime.now(UTC).isoformat(), **body.model_dump(exclude_none=True)}
    with dev_inbox_path(runtime.settings).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
    return {"status": "stored"}
