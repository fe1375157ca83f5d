"""The dashboard with 500 open cases (target 7: page ≤ 100 KiB, server time ≤ 100 ms),
and the pipeline intake. In-process (FastAPI's test client, SQLite): the time is the
server's, with no network; it bounds the server time from above.

Run: .venv/bin/python -m bench.dashboard [OPEN_CASES]
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
from bench.common import Figure, verdict
from models.settings import Settings
from workflows.examples import valid_packet

PAGE_TARGET, TIME_TARGET = 100 * 1024, 0.100

REPO = Path(__file__).resolve().parents[1]
AGENT = {"Authorization": "Bearer agent-b"}


def timed(action: object, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return times


def report(count: int = 500) -> None:
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
            # three runs of ten loads; each run's figure is its median
            pages = [
                statistics.median(timed(lambda: client.get("/dashboard").raise_for_status(), 10))
                for _ in range(3)
            ]
            size = len(client.get("/dashboard").content)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    intake_ms = statistics.median(intake) * 1000
    print(
        f"pipeline raise (state folder read → advisory written → case stored): {intake_ms:.1f} ms"
    )
    page_time = Figure(tuple(pages))
    print(
        f"dashboard with {count} open cases: {page_time.show(' ms', 1000)}, "
        f"{size / 1024:.0f} KiB of HTML; peak RSS {peak:.0f} MiB"
    )
    print(f"  size {verdict(size, PAGE_TARGET, at_most=True).replace('102400', '100 KiB')}")
    print(f"  time {verdict(page_time.median, TIME_TARGET, at_most=True)} (100 ms)")


def main() -> None:
    report(int(sys.argv[1]) if len(sys.argv) > 1 else 500)


if __name__ == "__main__":
    main()
