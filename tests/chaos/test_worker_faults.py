"""Workers killed outright (SIGKILL) while cases flow: every case still closes, once."""

from __future__ import annotations

import os
import random
import signal
import threading
import time

import httpx
import pytest

from tests.chaos.auditor import audit, cases_of, explain
from tests.chaos.cluster import Cluster, wait_for
from tests.chaos.drive import agent_celery, packet, raise_http, report, run_prefix, seed_secret
from tests.chaos.sizes import SIZES

pytestmark = pytest.mark.timeout(SIZES.settle * 3)


def kill_children(cluster: Cluster, prefix: str, kills: list[str], stop: threading.Event) -> None:
    """SIGKILL a random pool child every few tenths of a second until `stop`; each kill
    records the states the run's cases were in."""
    chooser = random.Random(16)
    while not stop.wait(SIZES.child_kills_every):
        children = cluster.worker_children()
        if children:
            victim = chooser.choice(children)
            states = sorted({row.state for row in cases_of(cluster, prefix)})
            try:
                os.kill(victim, signal.SIGKILL)
                kills.append(",".join(states))
            except ProcessLookupError:
                pass


def test_worker_children_killed_through_every_stage_lose_nothing(cluster: Cluster) -> None:
    # Given a flow of cases that go through every stage on their own (window 1 s, timeout
    # 2 s: snapshot, routing, page, follow-up, default, close, wake) and a channel that holds
    # each send open a while, so kills land inside the send-to-commit window too
    prefix = run_prefix("child-kill")
    cluster.sink.mode = "slow"
    stop = threading.Event()
    kills: list[str] = []
    killer = threading.Thread(target=kill_children, args=(cluster, prefix, kills, stop))
    # When worker children are SIGKILLed, one every fraction of a second, while they work
    killer.start()
    try:
        with httpx.Client() as client:
            seed_secret(client, agent_celery(cluster), cluster, f"{prefix}-secret")
            for index in range(SIZES.child_kill_cases):
                response = raise_http(client, cluster, packet(f"{prefix}-{index % 8}", index))
                assert response.status_code == 201, response.text
                time.sleep(0.05)
        wait_for(
            lambda: len(kills),
            lambda n: n >= SIZES.child_kills,
            timeout=SIZES.settle,
            what=f"{SIZES.child_kills} kills",
        )
    finally:
        stop.set()
        killer.join()
    since = time.monotonic()
    cluster.sink.mode = "ok"
    # Then every case closes with one decision, its run woken and acknowledged; a page is
    # repeated at most once per kill (a kill between the send and its commit)
    result = audit(
        cluster,
        prefix,
        fault="worker child SIGKILL",
        since=since,
        timeout=SIZES.settle,
        allowance=len(kills),
    )
    result.extra["kills"] = len(kills)
    result.extra["states_at_kills"] = sorted({s for k in kills for s in k.split(",") if s})
    report(result)
    assert result.cases == SIZES.child_kill_cases + 1  # the secret's refused row, by name
    assert not result.problems(), explain(cluster, result)
    # Hundreds of kills: some landed while cases waited at each stage that waits (not
    # `snapshotted`, which a case passes in milliseconds on its way to routing)
    if SIZES.long:
        stages = {"received", "awaiting", "followed_up"}
        assert stages <= set(result.extra["states_at_kills"]), result.extra["states_at_kills"]


def test_a_worker_main_process_killed_mid_flow_loses_nothing(cluster: Cluster) -> None:
    # Given cases flowing through two prefork workers
    prefix = run_prefix("main-kill")
    with httpx.Client() as client:
        for index in range(SIZES.main_kill_cases):
            response = raise_http(client, cluster, packet(f"{prefix}-{index % 4}", index))
            assert response.status_code == 201, response.text
        # When one worker's main process is SIGKILLed (its unacked messages wait out the
        # broker's visibility timeout: only the SQL sweeper can re-drive them in time)
        cluster.live_workers()[0].kill()
        since = time.monotonic()
        # And a replacement starts, as a supervisor would restart it
        cluster.start_worker()
    # Then every case closes once, woken and acknowledged
    result = audit(
        cluster,
        prefix,
        fault="worker main SIGKILL",
        since=since,
        timeout=SIZES.settle,
        allowance=SIZES.concurrency,  # the pool's in-flight sends at the kill
    )
    report(result)
    assert result.cases == SIZES.main_kill_cases
    assert not result.problems(), explain(cluster, result)
