"""`python -m bench [--quick] [--only NAME,...]`: every benchmark, one after the other.

Each prints its figures (median of at least 3 runs, with min and max) beside its floor or
target. `--quick` runs each at a small size: minutes instead of hours, the same shapes.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from bench import check_cli, dashboard, e2e, intake_http, rss, sweep, wake

FULL: dict[str, Callable[[], None]] = {
    "e2e": lambda: e2e.report(cases=200, runs=e2e.RUNS),
    "sweep": lambda: sweep.report([10_000, 100_000, 1_000_000], ["sqlite", "postgres"], 5),
    "intake_http": lambda: intake_http.report([1, 10, 50], requests=200, runs=3),
    "wake": lambda: wake.report(cases=30, runs=3, backends=["embedded", "redis-postgres"]),
    "rss": lambda: rss.report([1_000, 50_000], batch=200),
    "dashboard": lambda: dashboard.report(500),
    "check": lambda: check_cli.report(10),
}
QUICK: dict[str, Callable[[], None]] = {
    "e2e": lambda: e2e.report(cases=30, runs=3),
    "sweep": lambda: sweep.report([1_000, 10_000], ["sqlite", "postgres"], 3),
    "intake_http": lambda: intake_http.report([1, 10], requests=30, runs=3),
    "wake": lambda: wake.report(cases=5, runs=3, backends=["embedded", "redis-postgres"]),
    "rss": lambda: rss.report([100, 300], batch=100),
    "dashboard": lambda: dashboard.report(100),
    "check": lambda: check_cli.report(10),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, same shapes")
    parser.add_argument("--only", default="", help=f"comma-separated, of: {', '.join(FULL)}")
    args = parser.parse_args()
    chosen = QUICK if args.quick else FULL
    names = [n for n in args.only.split(",") if n] or list(chosen)
    for name in names:
        started = time.perf_counter()
        print(f"== {name}", flush=True)
        chosen[name]()
        print(f"   ({time.perf_counter() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
