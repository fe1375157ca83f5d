"""The README's Celery path, as written: examples/celery_client.py run where only celery is."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from models.settings import Settings
from tests.support.agent_venv import clean_env
from tests.support.processes import stop
from tests.support.waiting import wait_until
from tests.workers.conftest import Harness
from workers.answers import answer
from workers.runtime import runtime_for
from workflows.examples import valid_packet

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "celery_client.py"


@pytest.fixture
def client_folder(tmp_path: Path) -> Path:
    """A folder holding the example and nothing of ours, as an agent's checkout would."""
    folder = tmp_path / "my-agent"
    folder.mkdir()
    shutil.copy(EXAMPLE, folder / EXAMPLE.name)
    return folder


@pytest.fixture
def client_env(settings: Settings) -> dict[str, str]:
    return clean_env(
        BROKER_URL=settings.resolved_broker_url,
        ESCALATE_QUEUE=settings.queue,  # the test's private service queue
        AGENT_QUEUE=f"{settings.queue}-agent",
    )


@pytest.fixture
def client_worker(
    celery_only_python: Path, client_folder: Path, client_env: dict[str, str]
) -> Iterator[subprocess.Popen[bytes]]:
    """The example's own worker, run as its docstring says."""
    with (client_folder / "worker.log").open("wb") as log:
        worker = subprocess.Popen(
            [
                str(celery_only_python),
                *("-m", "celery", "-A", "celery_client", "worker"),
                *("-Q", client_env["AGENT_QUEUE"], "--pool", "solo", "--loglevel", "warning"),
                *("--without-mingle", "--without-gossip", "--without-heartbeat"),
            ],
            cwd=client_folder,
            env=client_env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    yield worker
    stop(worker, grace=0)  # the test has read its wakes


def test_the_readme_shows_the_example_as_it_is() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = re.search(r"`examples/celery_client\.py`:\n\n```python\n(.*?)```", readme, re.S)
    assert shown is not None, "README: the Celery example block after `examples/celery_client.py`:"
    assert shown.group(1) == EXAMPLE.read_text(encoding="utf-8")


@pytest.mark.parametrize("backend", ["redis-postgres"], indirect=True)
def test_an_agent_with_only_celery_raises_by_name_and_is_woken_with_the_decision(
    service: Harness,
    celery_only_python: Path,
    client_folder: Path,
    client_env: dict[str, str],
    client_worker: subprocess.Popen[bytes],
) -> None:
    # Given a packet that leaves recipient and waiting behavior to the design
    packet: dict[str, Any] = {**valid_packet(), "packet_id": "esc-client-1"}
    del packet["recipient"], packet["waiting_behavior"]
    (client_folder / "packet.json").write_text(json.dumps(packet), encoding="utf-8")
    # When the example raises it, from a Python with only celery
    raised = subprocess.run(
        [str(celery_only_python), EXAMPLE.name, "packet.json"],
        cwd=client_folder,
        env=client_env,
        capture_output=True,
        timeout=60,
    )
    assert raised.returncode == 0, raised.stderr.decode()
    # Then the service stored it, filled as the CLI and HTTP paths are, and paged the tier
    case = service.case("run-8842", "esc-client-1")
    assert case.packet is not None
    assert (case.packet["recipient"], case.packet["waiting_behavior"]) == ("ops", "read_only")
    [accepted] = service.events(case.id, "accepted")
    assert accepted.detail["filled_by_design"] == ["recipient", "waiting_behavior"]
    service.sink.wait_for(lambda got: any(r.path == "/ops" for r in got))
    service.in_state(case.id, "awaiting", "followed_up")
    # And when a person decides, the example's worker gets the decision once
    result = answer(
        runtime_for(service.app), case.id, option="approve", responder="ana", channel="t"
    )
    assert result.decided
    wakes = client_folder / "wakes.jsonl"
    lines = wait_until(
        lambda: wakes.read_text().splitlines() if wakes.exists() else [],
        timeout=30,
        what="the example's wake",
    )
    [wake] = [json.loads(line) for line in lines]
    assert (wake["escalation_id"], wake["outcome"], wake["option"], wake["decided_by"]) == (
        case.id,
        "decided",
        "approve",
        "ana",
    )
