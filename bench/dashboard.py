"""How long the dashboard takes to render with many open cases, and the pipeline intake.

Run: .venv/bin/python bench/dashboard.py [OPEN_CASES]
"""

from __future__ import annotations

import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from fastapi.testclient import TestClient

from api.app import create_app
from models.settings import Settings
from workflows.examples import valid_packet

REPO = Path(__file__).resolve().parents[1]
AGENT = {"Authorization": "Bearer agent-b"}


def timed(action: object, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(
            home=Path(folder) / "home",
            design=REPO / "examples" / "design.yaml",
            api_tokens="agent:agent-b,operator:op-b",
        )
        with TestClient(create_app(settings)) as client:
            for index in range(count):
                packet = {
                    **valid_packet(),
                    "packet_id": f"bench-{index}",
                    "blocked_on": f"Point {index} of the benchmark.",
                }
                client.post("/v1/escalations", headers=AGENT, json={"packet": packet})
            state = Path(folder) / "pipeline"
            state.mkdir()

            raised = iter(range(10**6))

            def raise_pipeline() -> None:
                # A new trigger reason each time, so each raise files a case rather than joining
                reason = f"executor retries exhausted ({next(raised)})"
                phase_state = {"phase": 1, "escalation_trigger_reason": reason}
                (state / "phase_state.json").write_text(json.dumps(phase_state))
                response = client.post(
                    "/v1/pipelines/escalations", headers=AGENT, json={"state_dir": str(state)}
                )
                assert response.status_code in (200, 201), response.text

            raise_pipeline()  # first call pays for imports and the secret scanner's start
            intake = timed(raise_pipeline, 30)
            client.post("/dashboard/login", data={"token": "op-b"})
            client.get("/dashboard")
            pages = timed(lambda: client.get("/dashboard").raise_for_status(), 10)
            size = len(client.get("/dashboard").content)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    intake_ms = statistics.median(intake) * 1000
    print(
        f"pipeline raise (state folder read → advisory written → case stored): {intake_ms:.1f} ms"
    )
    print(
        f"dashboard with {count} open cases: median {statistics.median(pages) * 1000:.0f} ms, "
        f"{size / 1024:.0f} KiB of HTML; peak RSS {peak:.0f} MiB"
    )


if __name__ == "__main__":
    main()
