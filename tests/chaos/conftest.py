"""The chaos suite's fixtures: one deployment for the package, healed before every fault."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.chaos.cluster import Cluster, running_cluster
from tests.chaos.drive import agent_celery, run_prefix, seed_secret
from tests.chaos.sizes import SIZES
from tests.support.agent_venv import cached_celery_only_venv
from tests.support.services import require_program

WORKERS = 2


@pytest.fixture(scope="session")
def agent_python() -> Path:
    """A Python with only celery installed: the agent's side (the suite's one, built once)."""
    return cached_celery_only_venv(Path(sys.prefix) / "test-venvs")


# Package scope: torn down after the last chaos test, not left sweeping through the rest
# of the suite.
@pytest.fixture(scope="package")
def deployment(agent_python: Path) -> Iterator[Cluster]:
    require_program("redis-server", "the chaos suite runs a Redis of its own")
    with running_cluster(
        agent_python=agent_python, workers=WORKERS, concurrency=SIZES.concurrency
    ) as cluster:
        yield cluster


@pytest.fixture
def cluster(deployment: Cluster) -> Cluster:
    """The deployment, every server up and WORKERS workers consuming, whatever ran before;
    a fresh cloud key raised and refused, which the fault's audit must find nowhere."""
    deployment.heal(WORKERS)
    with httpx.Client() as client:
        seed_secret(client, agent_celery(deployment), deployment, run_prefix("seeded"))
    return deployment
