"""`/metrics`: the service's figures for Prometheus, read from SQL at each scrape."""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from api.deps import CurrentOperator, RuntimeDep
from api.metrics import exposition

router = APIRouter()


@router.get("/metrics", include_in_schema=False)
def metrics(runtime: RuntimeDep, _role: CurrentOperator) -> Response:
    """Open cases by state and severity, the oldest one's age, decided-not-resumed,
    deliveries by outcome, stage latencies, time to decision per tier and channel."""
    return Response(exposition(runtime.engine), media_type=CONTENT_TYPE_LATEST)
