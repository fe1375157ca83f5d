"""End-to-end workflow figures: intake → notification → answer → close, with a real worker.

Run: .venv/bin/python bench/workflow.py [CASES] [sqlite|redis-postgres]
Prints latency from intake (send_task by name) to the notification reaching a local HTTP
sink, from answer to close, throughput, and this process's peak RSS (API-free: the worker
runs in threads here, as `escalate serve` runs it).
"""

from __future__ import annotations

import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from celery.beat import EmbeddedService
from celery.contrib.testing.worker import start_worker
from sqlmodel import Session, col, func, select

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from models.db import make_engine  # noqa: E402
from models.migrate import upgrade  # noqa: E402
from models.settings import Settings  # noqa: E402
from models.tables import Delivery, Escalation  # noqa: E402
from tests.support.services import fresh_postgres_database  # noqa: E402
from tests.support.sink import start_sink  # noqa: E402
from workers.answers import answer  # noqa: E402
from workers.app import make_celery  # noqa: E402
from workers.runtime import runtime_for  # noqa: E402
from workflows.examples import valid_packet  # noqa: E402


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def run(cases: int, backend: dict[str, Any], home: Path) -> None:
    sink = start_sink()
    apprise_yaml = home / "apprise.yaml"
    host = sink.url.removeprefix("http://")
    tags = ("ops", "ops-log", "oncall", "oncall-pager", "ops-low")
    apprise_yaml.write_text(
        "urls:\n" + "".join(f"  - json://{host}/{tag}:\n      tag: {tag}\n" for tag in tags)
    )
    settings = Settings(
        home=home / "state",
        design=REPO / "examples" / "design.yaml",
        apprise_config=apprise_yaml,
        sweep_interval=1.0,
        **backend,
    )
    upgrade(settings)
    app = make_celery(settings)
    engine = make_engine(settings)
    beat = EmbeddedService(app, thread=True, schedule_filename=str(home / "beat"))
    with start_worker(
        app, pool="threads", concurrency=4, perform_ping_check=False, shutdown_timeout=30
    ):
        beat.start()
        sent_at: dict[str, float] = {}
        started = time.perf_counter()
        for index in range(cases):
            packet_id = f"bench-{index}"
            sent_at[packet_id] = time.perf_counter()
            app.send_task(
                "escalation.escalate",
                # a distinct question each: a repeat would join the open case (SPEC §9)
                kwargs={
                    "packet": {
                        **valid_packet(),
                        "packet_id": packet_id,
                        "blocked_on": f"Point {index} needs a decision.",
                    }
                },
            )
        # Primary notifications go to /ops; the marked copies to /ops-log.
        sink.wait_for(lambda got: sum(r.path == "/ops" for r in got) >= cases, timeout=600)
        notified = time.perf_counter()
        arrived: dict[str, float] = {}
        for record in sink.posts("/ops"):
            packet_id = record.body["message"].split(" · packet ", 1)[1].split(" ", 1)[0]
            arrived.setdefault(packet_id, record.at)
        latencies = [arrived[p] - sent_at[p] for p in arrived if p in sent_at]
        with Session(engine) as session:
            ids = list(session.exec(select(Escalation.id)))
        runtime = runtime_for(app)
        answered = time.perf_counter()
        for escalation_id in ids:
            answer(runtime, escalation_id, option="approve", responder="bench", channel="bench")
        while True:
            with Session(engine) as session:
                closed = session.exec(
                    select(func.count())
                    .select_from(Escalation)
                    .where(col(Escalation.state) == "closed")
                ).one()
            if closed >= cases:
                break
            time.sleep(0.05)
        done = time.perf_counter()
        beat.stop()
    with Session(engine) as session:
        failed = session.exec(
            select(func.count()).select_from(Delivery).where(col(Delivery.last_error).is_not(None))
        ).one()
    engine.dispose()
    sink.server.shutdown()
    broker = "Redis" if "broker_url" in backend else "the embedded folder broker"
    database = "PostgreSQL" if "database_url" in backend else "SQLite"
    print(f"{cases} cases on {broker} + {database}")
    print(
        f"  intake → notification at the sink: p50 {statistics.median(latencies):.2f} s, "
        f"p95 {percentile(latencies, 0.95):.2f} s; all {cases} notified in "
        f"{notified - started:.1f} s ({cases / (notified - started):.1f} cases/s)"
    )
    print(
        f"  answer → closed for all {cases}: {done - answered:.1f} s "
        f"({cases / (done - answered):.1f} cases/s)"
    )
    print(f"  deliveries with a failed attempt: {failed}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  peak RSS of worker + beat + driver in one process: {peak:.0f} MiB")


def main() -> None:
    cases = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    which = sys.argv[2] if len(sys.argv) > 2 else "sqlite"
    with tempfile.TemporaryDirectory() as tmp:
        if which == "sqlite":
            run(cases, {}, Path(tmp))
        else:
            with fresh_postgres_database() as url:
                run(
                    cases,
                    {
                        "database_url": url,
                        "broker_url": "redis://127.0.0.1:6379/0",
                        "queue": "bench",
                    },
                    Path(tmp),
                )


if __name__ == "__main__":
    main()
