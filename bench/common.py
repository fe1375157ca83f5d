"""What every benchmark shares: repeated runs summarised, services, a worker subprocess."""

from __future__ import annotations

import os
import secrets
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")


@dataclass(frozen=True)
class Figure:
    """One figure over several runs: median with min and max."""

    values: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    def show(self, unit: str = "", scale: float = 1.0, digits: int = 1) -> str:
        m, lo, hi = (v * scale for v in (self.median, min(self.values), max(self.values)))
        return (
            f"{m:.{digits}f}{unit} (min {lo:.{digits}f}, max {hi:.{digits}f}, n={len(self.values)})"
        )


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round((len(ordered) - 1) * share))]


def verdict(ratio: float, target: float, *, at_most: bool) -> str:
    met = ratio <= target if at_most else ratio >= target
    return f"{'met' if met else 'NOT met'} (target {'≤' if at_most else '≥'} {target:g})"


def repeat(runs: int, measure: Callable[[], dict[str, float]]) -> dict[str, Figure]:
    """Run `measure` `runs` times; each key becomes a Figure over the runs."""
    results = [measure() for _ in range(runs)]
    return {key: Figure(tuple(r[key] for r in results)) for key in results[0]}


def wait_for(check: Callable[[], Any], *, timeout: float, what: str, every: float = 0.02) -> Any:
    """Poll until `check()` is truthy (benchmarks poll SQL: nothing to join across processes)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


def private_queue(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(4)}"


@contextmanager
def postgres_database() -> Iterator[str]:
    """A fresh PostgreSQL database, dropped afterwards (the tests' helper, reused)."""
    from tests.support.services import fresh_postgres_database

    with fresh_postgres_database() as url:
        yield url


def analyze(url: str) -> None:
    """Fresh planner statistics for the database at `url`, as autovacuum keeps them on a
    deployed PostgreSQL (this machine's runs without it: its CI settings)."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            connection.execute(text("ANALYZE"))
    finally:
        engine.dispose()


@contextmanager
def celery_worker(
    app_module: str,
    queue: str,
    env: dict[str, str],
    *,
    concurrency: int = 2,
    pool: str = "prefork",
    log: Path,
) -> Iterator[subprocess.Popen[bytes]]:
    """`celery -A app_module worker --pool POOL` on one queue, until it says ready."""
    command = [
        PYTHON, "-m", "celery", "-A", app_module, "worker", "--pool", pool,
        "--concurrency", str(concurrency), "-Q", queue, "--without-gossip", "--without-mingle",
        "--without-heartbeat", "--loglevel", "INFO",
    ]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=REPO, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        wait_for(
            lambda: b"ready." in log.read_bytes() or process.poll() is not None,
            timeout=120,
            what=f"the {app_module} worker",
            every=0.1,
        )
        if process.poll() is not None:
            raise RuntimeError(f"worker exited: {log.read_text()[-2000:]}")
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def child_pids(pid: int) -> list[int]:
    """The direct children of a process (prefork pool processes)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0
