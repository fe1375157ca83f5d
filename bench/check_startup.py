"""How fast `escalate check` starts and how much memory it takes: shell loops call it often.

Run: .venv/bin/python bench/check_startup.py [RUNS]
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ESCALATE = str(Path(sys.executable).parent / "escalate")


def run_once(args: list[str]) -> tuple[float, int]:
    """Wall seconds and the child's peak RSS in KiB."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    subprocess.run([ESCALATE, *args], capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return elapsed, max(peak, before)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    for label, args in (
        ("check --make-valid", ["check", "--make-valid"]),
        ("check --make-fixture --json", ["check", "--make-fixture", "--json"]),
    ):
        run_once(args)  # warm the page cache and .pyc files, as a loop's second pass would be
        times = []
        peak = 0
        for _ in range(runs):
            elapsed, rss = run_once(args)
            times.append(elapsed)
            peak = max(peak, rss)
        times.sort()
        p95 = times[max(0, int(len(times) * 0.95) - 1)]
        print(
            f"escalate {label}: median {statistics.median(times) * 1000:.0f} ms, "
            f"p95 {p95 * 1000:.0f} ms over {runs} runs; peak RSS {peak / 1024:.0f} MiB"
        )


if __name__ == "__main__":
    main()
