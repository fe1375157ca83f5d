"""Worker memory after 1 k and after 50 k cases (target 6: flat within 10 %).

Redis + PostgreSQL, one prefork worker `--concurrency 2`, cases raised and answered in
rounds as bench/e2e.py does; the resident memory of the worker and its pool processes
is read from /proc after the first mark and after the last. 50 k cases take hours on a
loaded machine: `--marks` chooses the sizes.

Run: .venv/bin/python -m bench.rss [--marks 1000,50000] [--batch 200]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench.common import celery_worker, child_pids, postgres_database, rss_mib, verdict
from bench.e2e import Real
from bench.platform_sink import platform_sink

TARGET = 1.10


def measure(marks: list[int], batch: int) -> dict[int, float]:
    """Total resident MiB of the worker (main + pool processes) at each mark."""
    found: dict[int, float] = {}
    with (
        tempfile.TemporaryDirectory() as tmp,
        postgres_database() as url,
        platform_sink() as sink,
    ):
        home = Path(tmp)
        real = Real(home, url, sink.url)
        with celery_worker(
            "workers.celery_app", real.queue, real.env, log=home / "worker.log"
        ) as worker:
            done = 0
            for mark in marks:
                while done < mark:
                    size = min(batch, mark - done)
                    real.round(size, f"rss-{done}", sink)
                    done += size
                pids = [worker.pid, *child_pids(worker.pid)]
                found[mark] = sum(rss_mib(pid) for pid in pids)
    return found


def report(marks: list[int], batch: int) -> None:
    found = measure(marks, batch)
    print("worker resident memory (main + 2 pool processes), Redis + PostgreSQL")
    for mark, mib in found.items():
        print(f"  after {mark:>6,} cases: {mib:.0f} MiB")
    growth = found[marks[-1]] / found[marks[0]]
    print(f"  {marks[-1]:,} / {marks[0]:,}: {growth:.3f} — {verdict(growth, TARGET, at_most=True)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--marks", default="1000,50000")
    parser.add_argument("--batch", type=int, default=200)
    args = parser.parse_args()
    report([int(m) for m in args.marks.split(",")], args.batch)


if __name__ == "__main__":
    main()
