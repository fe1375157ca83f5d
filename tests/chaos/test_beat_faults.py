"""Two beats sweep one database the whole suite long; here one of them is killed mid-flow.
Each window still gets one follow-up, each case one default, and nothing stalls."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.chaos.auditor import audit, explain
from tests.chaos.cluster import Cluster
from tests.chaos.drive import packet, raise_http, report, run_prefix
from tests.chaos.sizes import SIZES

pytestmark = pytest.mark.timeout(SIZES.settle * 3)


def test_two_beats_then_one_killed_page_each_window_once(cluster: Cluster) -> None:
    # Given two beats and cases that need them: a follow-up after 1 s, a default after 2 s
    prefix = run_prefix("beats")
    assert len([b for b in cluster.beats if b.alive()]) == 2
    with httpx.Client() as client:
        for index in range(SIZES.main_kill_cases):
            body = packet(f"{prefix}-{index % 4}", index, severity="high")
            assert raise_http(client, cluster, body).status_code == 201
        # When one beat is SIGKILLed halfway through
        time.sleep(1.0)
        cluster.beats[0].kill()
    since = time.monotonic()
    # Then the other carries on: one follow-up per window, one decision, every run woken
    result = audit(
        cluster, prefix, fault="two beats, one killed", since=since, timeout=SIZES.settle
    )
    report(result)
    assert result.cases == SIZES.main_kill_cases
    assert not result.problems(), explain(cluster, result)
