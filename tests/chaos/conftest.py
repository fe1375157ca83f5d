"""The chaos suite's fixtures: one deployment per session, healed before every fault."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chaos.celery_only import make_celery_only_python
from tests.chaos.cluster import Cluster, running_cluster
from tests.chaos.sizes import SIZES
from tests.support.services import require

WORKERS = 2


@pytest.fixture(scope="session")
def agent_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Python with only celery installed: the agent's side."""
    return make_celery_only_python(tmp_path_factory.mktemp("chaos-agent") / "venv")


@pytest.fixture(scope="session")
def deployment(agent_python: Path) -> Iterator[Cluster]:
    with running_cluster(
        agent_python=agent_python, workers=WORKERS, concurrency=SIZES.concurrency
    ) as cluster:
        yield cluster


@pytest.fixture
def cluster(deployment: Cluster) -> Cluster:
    """The deployment, every server up and WORKERS workers consuming, whatever ran before."""
    require(("127.0.0.1", 6379), "Redis")  # the machine's services are the suite's baseline
    deployment.heal(WORKERS)
    return deployment
