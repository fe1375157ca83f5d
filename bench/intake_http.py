"""`POST /v1/escalations` at 1, 10 and 50 concurrent clients against a bare endpoint
(target 3: p99 ≤ 3 × the bare endpoint's p99 at each level).

Both are served by uvicorn (one process each, as `escalate serve` runs the API) on
Redis + PostgreSQL; the bare one (bench/bare_app.py) inserts one row into the same
database. Levels alternate between the two, so load on the machine hits both.

Run: .venv/bin/python -m bench.intake_http [--requests N] [--levels 1,10,50] [--runs R]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from bench.common import (
    PYTHON,
    REDIS_URL,
    REPO,
    Figure,
    percentile,
    postgres_database,
    private_queue,
    verdict,
    wait_for,
)

TARGET = 3.0
AGENT = {"Authorization": "Bearer bench-agent"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def uvicorn(factory: str, env: dict[str, str], log: Path) -> Iterator[str]:
    port = free_port()
    command = [
        PYTHON, "-m", "uvicorn", "--factory", factory, "--host", "127.0.0.1",
        "--port", str(port), "--no-access-log", "--no-proxy-headers",
    ]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=REPO, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"{factory} exited: {log.read_text()[-2000:]}")
        try:
            return httpx.get(f"{url}/docs", timeout=1).status_code < 500
        except httpx.HTTPError:
            return False

    try:
        wait_for(up, timeout=120, what=factory, every=0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def body(index: int, tag: str) -> dict[str, Any]:
    from workflows.examples import valid_packet

    packet = {
        **valid_packet(),
        "run_id": f"http-{tag}",
        "packet_id": f"p-{index}",
        "blocked_on": f"Point {index} of {tag} needs a decision.",
    }
    return {"packet": packet}


async def load(url: str, clients: int, requests: int, tag: str) -> list[float]:
    """`clients` concurrent connections sending `requests` in all; each one's latency."""
    latencies: list[float] = []
    numbers = iter(range(requests))

    async def client(http: httpx.AsyncClient) -> None:
        for index in numbers:
            started = time.perf_counter()
            response = await http.post(url, json=body(index, tag), headers=AGENT)
            latencies.append(time.perf_counter() - started)
            if response.status_code != 201:
                raise RuntimeError(f"{url}: {response.status_code} {response.text[:300]}")

    limits = httpx.Limits(max_connections=clients)
    async with httpx.AsyncClient(limits=limits, timeout=60) as http:
        await asyncio.gather(*(client(http) for _ in range(clients)))
    return latencies


def measure(levels: list[int], requests: int, runs: int) -> dict[int, dict[str, Figure]]:
    results: dict[int, dict[str, list[float]]] = {
        c: {k: [] for k in ("p50", "p99", "bare_p50", "bare_p99", "ratio")} for c in levels
    }
    with tempfile.TemporaryDirectory() as tmp, postgres_database() as url:
        home = Path(tmp)
        queue = private_queue("bench-http")
        env = {
            "ESCALATE_HOME": str(home / "state"),
            "ESCALATE_DATABASE_URL": url,
            "ESCALATE_BROKER_URL": REDIS_URL,
            "ESCALATE_QUEUE": queue,
            "ESCALATE_DESIGN": str(REPO / "examples" / "design.yaml"),
            "ESCALATE_API_TOKENS": "agent:bench-agent,operator:bench-op,admin:bench-admin",
            "ESCALATE_ANSWER_KEY": "bench-answer-key",
            "ESCALATE_WEBHOOK_SECRET": "bench-webhook-secret",
            "BENCH_BARE_DATABASE": url,
        }
        with (
            uvicorn("api.app:app_from_env", env, home / "api.log") as api,
            uvicorn("bench.bare_app:make_app", env, home / "bare.log") as bare,
        ):
            asyncio.run(load(f"{api}/v1/escalations", 2, 20, "warm-up"))
            asyncio.run(load(f"{bare}/bare", 2, 20, "warm-up"))
            for run in range(runs):
                for clients in levels:
                    tag = f"{run}-{clients}"
                    real = asyncio.run(load(f"{api}/v1/escalations", clients, requests, tag))
                    floor = asyncio.run(load(f"{bare}/bare", clients, requests, tag))
                    got = results[clients]
                    got["p50"].append(percentile(real, 0.5))
                    got["p99"].append(percentile(real, 0.99))
                    got["bare_p50"].append(percentile(floor, 0.5))
                    got["bare_p99"].append(percentile(floor, 0.99))
                    got["ratio"].append(got["p99"][-1] / got["bare_p99"][-1])
        _drop_queue(queue)
    return {c: {k: Figure(tuple(v)) for k, v in got.items()} for c, got in results.items()}


def _drop_queue(queue: str) -> None:
    """The raises' nudges were sent to a queue nobody consumes: remove it."""
    import redis

    redis.Redis.from_url(REDIS_URL).delete(queue)


def report(levels: list[int], requests: int, runs: int) -> None:
    results = measure(levels, requests, runs)
    print(f"POST /v1/escalations, {requests} requests a level, Redis + PostgreSQL, uvicorn")
    for clients, got in results.items():
        ratio = got["ratio"]
        print(
            f"  {clients:>2} clients: p50 {got['p50'].show(' ms', 1000)}, "
            f"p99 {got['p99'].show(' ms', 1000)}"
        )
        print(
            f"      bare: p50 {got['bare_p50'].show(' ms', 1000)}, "
            f"p99 {got['bare_p99'].show(' ms', 1000)}"
        )
        met = verdict(ratio.median, TARGET, at_most=True)
        print(f"      p99 ratio {ratio.show(digits=2)} — {met}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--levels", default="1,10,50")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    report([int(c) for c in args.levels.split(",")], args.requests, args.runs)


if __name__ == "__main__":
    main()
