"""How big each fault is: small in `make test`, full size with CHAOS=long (`make chaos`)."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Sizes:
    long: bool
    concurrency: int  # pool processes per prefork worker
    child_kill_cases: int
    child_kills: int  # SIGKILLs of worker children, at least
    child_kills_every: float  # seconds between them
    main_kill_cases: int
    redis_cases: int
    redis_kills: int
    postgres_cases: int
    postgres_down_for: float
    sink_cases: int
    reply_cases: int
    replies_per_case: int
    storm_agents: int
    storm_raises: int  # in all, repeats included
    storm_questions_per_agent: int
    storm_seconds: float
    settle: float  # seconds the auditor waits for every case to settle
    # The sweeper's pace: fast in the small run; nearer the defaults at full size, where a
    # 2 s stall interval under a backlog re-drives faster than the workers drain (RELIABILITY.md)
    sweep_interval: float
    stall_after: float


SHORT = Sizes(
    long=False,
    concurrency=2,
    child_kill_cases=12,
    child_kills=4,
    child_kills_every=0.8,
    main_kill_cases=6,
    redis_cases=10,
    redis_kills=1,
    postgres_cases=6,
    postgres_down_for=3.0,
    sink_cases=6,
    reply_cases=8,
    replies_per_case=10,
    storm_agents=8,
    storm_raises=160,
    storm_questions_per_agent=2,
    storm_seconds=1.0,
    settle=60.0,
    sweep_interval=0.3,
    stall_after=2.0,
)
LONG = Sizes(
    long=True,
    concurrency=4,
    child_kill_cases=1000,
    child_kills=300,
    child_kills_every=1.0,
    main_kill_cases=100,
    redis_cases=100,
    redis_kills=3,
    postgres_cases=100,
    postgres_down_for=30.0,
    sink_cases=50,
    reply_cases=100,
    replies_per_case=50,
    storm_agents=100,
    storm_raises=10_000,
    storm_questions_per_agent=10,
    storm_seconds=10.0,
    settle=900.0,
    sweep_interval=1.0,
    stall_after=20.0,
)
SIZES = LONG if os.environ.get("CHAOS", "").lower() == "long" else SHORT
