"""Worker memory after 1 k and after 50 k cases (target 6: flat within 10 %).

Redis + PostgreSQL, one prefork worker `--concurrency 2`, cases raised and answered in
rounds as bench/e2e.py does; the resident memory of the worker and its pool processes
is read from /proc at each mark. Each run starts a fresh worker on a fresh database; the
figures are medians over `--runs` runs. 50 k cases take about 20 minutes a run on a quiet
machine and hours on a loaded one: `--marks` chooses the sizes.

Run: .venv/bin/python -m bench.rss [--marks 1000,50000] [--batch 200] [--runs 3]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench.common import (
    Figure,
    analyze,
    celery_worker,
    child_pids,
    postgres_database,
    repeat,
    rss_mib,
    verdict,
)
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
                    # plans made from no statistics are not what this measures (they found
                    # one: migration 0097)
                    analyze(url)
                pids = [worker.pid, *child_pids(worker.pid)]
                found[mark] = sum(rss_mib(pid) for pid in pids)
    return found


GROWTH = "growth"


def runs_of(marks: list[int], batch: int, runs: int) -> dict[str, Figure]:
    """Each mark's MiB and the last mark's growth over the first, over `runs` fresh runs."""

    def one() -> dict[str, float]:
        found = measure(marks, batch)
        return {
            **{str(mark): mib for mark, mib in found.items()},
            GROWTH: found[marks[-1]] / found[marks[0]],
        }

    return repeat(runs, one)


def report(marks: list[int], batch: int, runs: int = 3) -> None:
    figures = runs_of(marks, batch, runs)
    print("worker resident memory (main + 2 pool processes), Redis + PostgreSQL")
    for mark in marks:
        print(f"  after {mark:>6,} cases: {figures[str(mark)].show(' MiB', digits=0)}")
    growth = figures[GROWTH]
    print(
        f"  {marks[-1]:,} / {marks[0]:,}: {growth.show(digits=3)}"
        f" — {verdict(growth.median, TARGET, at_most=True)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--marks", default="1000,50000")
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3, help="fresh workers, one after another")
    args = parser.parse_args()
    report([int(m) for m in args.marks.split(",")], args.batch, args.runs)


if __name__ == "__main__":
    main()
