"""The broker and the database lost under a live flow: Redis killed and restarted empty,
PostgreSQL stopped during intake and replies. Nothing accepted is lost; the API says 503."""

from __future__ import annotations

import threading
import time
from collections import Counter

import httpx
import pytest

from tests.chaos.auditor import audit, cases_of, explain, sql
from tests.chaos.cluster import Cluster, wait_for
from tests.chaos.drive import (
    agent_celery,
    packet,
    raise_by_name,
    raise_http,
    reply_http,
    report,
    run_prefix,
)
from tests.chaos.sizes import SIZES

pytestmark = pytest.mark.timeout(SIZES.settle * 3)


def test_redis_killed_and_restarted_empty_loses_no_accepted_case(cluster: Cluster) -> None:
    # Given cases raised over HTTP (201: stored in SQL) while the broker is lost, kill -9
    # and its append-only file with it, several times
    prefix = run_prefix("redis")
    statuses: Counter[int] = Counter()
    done = threading.Event()

    def raise_all() -> None:
        with httpx.Client() as client:
            for index in range(SIZES.redis_cases):
                response = raise_http(client, cluster, packet(f"{prefix}-{index % 4}", index))
                statuses[response.status_code] += 1
                time.sleep(0.1)
        done.set()

    raiser = threading.Thread(target=raise_all)
    raiser.start()
    for _ in range(SIZES.redis_kills):
        time.sleep(0.5)
        # When Redis is killed and comes back empty
        cluster.redis.kill_and_restart_empty()
    raiser.join()
    since = time.monotonic()
    # Then every accepted case closes once, its run woken and acknowledged; no 5xx but 503
    result = audit(
        cluster, prefix, fault="Redis kill -9, restarted empty", since=since, timeout=SIZES.settle
    )
    result.extra["kills"] = SIZES.redis_kills
    result.extra["statuses"] = dict(statuses)
    report(result)
    assert set(statuses) <= {201, 503}, statuses
    assert result.cases == statuses[201]
    assert not result.problems(), explain(cluster, result)
    # And no worker was lost to the restarts: nothing here starts a stopped one again
    assert all(worker.alive() for worker in cluster.workers), explain(cluster, result)


def test_postgres_stopped_during_intake_and_replies_loses_nothing(cluster: Cluster) -> None:
    # Given open cases waiting for an answer (medium: a minute's window)
    prefix = run_prefix("postgres")
    agent = agent_celery(cluster)
    statuses: Counter[str] = Counter()
    with httpx.Client() as client:
        open_ids = []
        for index in range(SIZES.postgres_cases):
            response = raise_http(
                client, cluster, packet(f"{prefix}-open", index, severity="medium")
            )
            assert response.status_code == 201, response.text
            open_ids.append(response.json()["id"])
        wait_for(
            lambda: [r.state for r in cases_of(cluster, f"{prefix}-open")],
            lambda states: all(s == "awaiting" for s in states),
            timeout=SIZES.settle,
            what="the open cases to be awaiting",
        )
        # When PostgreSQL stops while agents raise (by name and over HTTP) and operators reply
        cluster.postgres.stop()
        stopped = time.monotonic()
        refused_raises = []
        index = 0
        while time.monotonic() - stopped < SIZES.postgres_down_for:
            body = packet(f"{prefix}-down", 1000 + index)
            raise_by_name(agent, cluster, body)
            http_body = packet(f"{prefix}-http", 2000 + index)
            response = raise_http(client, cluster, http_body)
            statuses[f"raise {response.status_code}"] += 1
            if response.status_code != 201:
                refused_raises.append(http_body)
            if index < len(open_ids):
                reply = reply_http(client, cluster, open_ids[index], "approve", "ana")
                statuses[f"reply {reply.status_code}"] += 1
            index += 1
            time.sleep(0.3)
        # And it starts again; the clients retry what was answered 503, as Retry-After says
        cluster.postgres.start()
        since = time.monotonic()
        wait_for(cluster.api_answers, timeout=60, what="the API to answer again")
        for body in refused_raises:
            response = raise_http(client, cluster, body)
            statuses[f"retried raise {response.status_code}"] += 1
        for case_id in open_ids:
            reply = reply_http(client, cluster, case_id, "approve", "ana")
            statuses[f"retried reply {reply.status_code}"] += 1
    # Then every raise sent by name is a case, exactly once, and every case closes
    result = audit(cluster, prefix, fault="PostgreSQL stopped", since=since, timeout=SIZES.settle)
    result.extra["down_for"] = SIZES.postgres_down_for
    result.extra["statuses"] = dict(statuses)
    result.extra["raised_while_down"] = index
    report(result)
    # While it was down, the API said so (503, retry later), never another server error;
    # every reply was refused that way, and nothing retried after failed on the server
    server_errors = {s for s in statuses if s.split()[-1].startswith("5")}
    assert server_errors <= {"raise 503", "reply 503"}, statuses
    assert statuses["raise 503"] >= 1, statuses  # the outage was seen by the API
    assert not [s for s in statuses if s.startswith("reply ") and s != "reply 503"], statuses
    by_run = Counter(row_run(cluster, prefix))
    assert by_run == {
        f"{prefix}-open": SIZES.postgres_cases,
        f"{prefix}-down": index,
        f"{prefix}-http": index,
    }, by_run
    assert not result.problems(), explain(cluster, result)


def row_run(cluster: Cluster, prefix: str) -> list[str]:
    return [
        r.run_id
        for r in sql(cluster, "SELECT run_id FROM escalations WHERE run_id LIKE :p", p=f"{prefix}%")
    ]
