"""Reply → wake: from an answer recorded to the run's webhook receiving its wake
(target 4: p50 ≤ 100 ms on the embedded defaults).

Embedded: SQLite and the folder broker, the worker as `escalate serve` runs it (threads,
concurrency 4). Redis + PostgreSQL: one prefork worker, concurrency 2. Cases are raised by
`send_task` with `wake.webhook` at a local HTTP sink, then answered one at a time
in-process; each latency runs from the answer's call to the webhook's arrival. No floor
is run for this one: the figure's structure is one broker hop (the close, which sends its
outbox itself) and the close's own work; the folder broker's consumer is woken when the
message lands, so the hop no longer costs up to its polling interval (0.1 s).

Run: .venv/bin/python -m bench.wake [--cases N] [--runs R] [--backends embedded,redis-postgres]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.common import (
    REDIS_URL,
    REPO,
    Figure,
    celery_worker,
    percentile,
    postgres_database,
    private_queue,
    verdict,
    wait_for,
)
from bench.e2e import TAGS, packet

TARGET = 0.100


@contextmanager
def backend(name: str, home: Path) -> Iterator[tuple[dict[str, str], str, int]]:
    """The service's environment for `name`, the worker's pool and its concurrency."""
    if name == "embedded":
        yield {"ESCALATE_HOME": str(home / "state")}, "threads", 4
        return
    with postgres_database() as url:
        env = {
            "ESCALATE_HOME": str(home / "state"),
            "ESCALATE_DATABASE_URL": url,
            "ESCALATE_BROKER_URL": REDIS_URL,
            "ESCALATE_QUEUE": private_queue("bench-wake"),
        }
        yield env, "prefork", 2


def measure(name: str, cases: int, runs: int) -> dict[str, Figure]:
    from models.migrate import upgrade
    from models.settings import Settings
    from tests.support.sink import start_sink
    from workers.answers import answer
    from workers.app import make_celery
    from workers.runtime import runtime_for

    p50s, p99s = [], []
    with tempfile.TemporaryDirectory() as tmp, backend(name, Path(tmp)) as (base, pool, n):
        home = Path(tmp)
        sink = start_sink()
        host = sink.url.removeprefix("http://")
        apprise_yaml = home / "apprise.yaml"
        apprise_yaml.write_text(
            "urls:\n" + "".join(f"  - json://{host}/{tag}:\n      tag: {tag}\n" for tag in TAGS)
        )
        env = {
            **base,
            "ESCALATE_DESIGN": str(REPO / "examples" / "design.yaml"),
            "ESCALATE_APPRISE_CONFIG": str(apprise_yaml),
            "ESCALATE_ANSWER_KEY": "bench-answer-key",
            "ESCALATE_WEBHOOK_SECRET": "bench-webhook-secret",
            "ESCALATE_OUTBOUND_ALLOW": f"127.0.0.1:{sink.server.server_port}",
        }
        settings = Settings(**{k.removeprefix("ESCALATE_").lower(): v for k, v in env.items()})
        upgrade(settings)
        app = make_celery(settings)
        runtime = runtime_for(app)
        queue = settings.queue
        with celery_worker("workers.celery_app", queue, env, pool=pool, concurrency=n,
                           log=home / "worker.log"):  # fmt: skip
            for run in range(runs + 1):  # the first round warms up
                tag = f"wake-{run}"
                seen = len(sink.posts("/ops"))
                for index in range(cases):
                    kwargs: dict[str, Any] = {
                        "packet": packet(index, tag),
                        "wake": {"webhook": f"{sink.url}/wake"},
                    }
                    app.send_task("escalation.escalate", queue=queue, kwargs=kwargs)
                sink.wait_for(
                    lambda got, s=seen: sum(r.path == "/ops" for r in got) >= s + cases,
                    timeout=600,
                )
                # The count above can be met by the last round's closing notices: wait in SQL
                # for every case of this round, and for an outbox with nothing left to send.
                ids = wait_for(
                    lambda t=tag: _round_ready(runtime.engine, t, cases),
                    timeout=600,
                    what=f"the {cases} cases of {tag}, paged",
                    every=0.1,
                )
                latencies = []
                for escalation_id in ids:
                    woken = len(sink.posts("/wake"))
                    started = time.perf_counter()
                    answer(runtime, escalation_id, option="approve", responder="bench",
                           channel="bench")  # fmt: skip
                    wait_for(
                        lambda w=woken: len(sink.posts("/wake")) > w,
                        timeout=60,
                        what="the wake",
                        every=0.002,
                    )
                    latencies.append(sink.posts("/wake")[-1].at - started)
                if run:
                    p50s.append(percentile(latencies, 0.5))
                    p99s.append(percentile(latencies, 0.99))
        runtime.engine.dispose()
        sink.server.shutdown()
    if name != "embedded":
        import redis

        redis.Redis.from_url(REDIS_URL).delete(queue)
    return {"p50": Figure(tuple(p50s)), "p99": Figure(tuple(p99s))}


def _round_ready(engine: Any, tag: str, cases: int) -> list[str] | None:
    """The round's case ids once all are stored and no outbox row is pending or being sent."""
    from sqlmodel import Session, col, func, select

    from models.tables import Delivery, Escalation

    with Session(engine) as session:
        ids = list(session.exec(select(Escalation.id).where(Escalation.run_id == tag)))
        busy = session.exec(
            select(func.count()).where(col(Delivery.state).in_(["pending", "sending"]))
        ).one()
    return ids if len(ids) == cases and not busy else None


def report(cases: int, runs: int, backends: list[str]) -> None:
    for name in backends:
        got = measure(name, cases, runs)
        print(f"reply → wake webhook, {name}, {cases} cases a round answered one at a time")
        print(f"  p50 {got['p50'].show(' ms', 1000)}, p99 {got['p99'].show(' ms', 1000)}")
        if name == "embedded":
            print(f"  p50 {verdict(got['p50'].median, TARGET, at_most=True)} (100 ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=30)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--backends", default="embedded,redis-postgres")
    args = parser.parse_args()
    report(args.cases, args.runs, args.backends.split(","))


if __name__ == "__main__":
    main()
