"""Crowds: many operators answering one case at once, and a storm of raises with repeats."""

from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

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


def open_cases(cluster: Cluster, prefix: str, count: int) -> list[str]:
    """`count` medium cases, awaiting an answer (a minute's window)."""
    with httpx.Client() as client:
        ids = []
        for index in range(count):
            response = raise_http(
                client, cluster, packet(f"{prefix}-{index % 5}", index, severity="medium")
            )
            assert response.status_code == 201, response.text
            ids.append(response.json()["id"])
    wait_for(
        lambda: [r.state for r in cases_of(cluster, prefix)],
        lambda states: len(states) == count and all(s == "awaiting" for s in states),
        timeout=SIZES.settle,
        what=f"{count} awaiting cases",
    )
    return ids


def test_concurrent_replies_give_each_case_one_decision(cluster: Cluster) -> None:
    # Given open cases
    prefix = run_prefix("replies")
    ids = open_cases(cluster, prefix, SIZES.reply_cases)
    statuses: Counter[int] = Counter()
    started = time.monotonic()
    # When many operators answer each case at the same moment, with different answers
    limits = httpx.Limits(max_connections=SIZES.replies_per_case)
    with httpx.Client(limits=limits) as client, ThreadPoolExecutor(SIZES.replies_per_case) as pool:
        for case_id in ids:
            answers = pool.map(
                lambda n, case_id=case_id: (
                    reply_http(
                        client, cluster, case_id, ("approve", "deny")[n % 2], f"op{n}"
                    ).status_code
                ),
                range(SIZES.replies_per_case),
            )
            got = Counter(answers)
            statuses.update(got)
            # Then exactly one of them decides; every other is told it was superseded
            assert got[200] == 1, (case_id, got)
    since = time.monotonic()
    result = audit(cluster, prefix, fault="concurrent replies", since=since, timeout=SIZES.settle)
    result.extra.update(
        replies=sum(statuses.values()),
        statuses=dict(statuses),
        replies_per_s=round(sum(statuses.values()) / (since - started), 1),
    )
    report(result)
    assert set(statuses) <= {200, 409}, statuses
    assert not result.problems(), explain(cluster, result)


def test_a_storm_of_raises_with_repeats_pages_once_per_question(cluster: Cluster) -> None:
    # Given many agents, each asking a few questions over and over (new packet ids for the
    # same question, and exact resends of a packet already sent)
    prefix = run_prefix("storm")
    per_agent = SIZES.storm_raises // SIZES.storm_agents
    questions = SIZES.storm_questions_per_agent

    burst = per_agent // questions  # a question's repeats go out back to back

    def packet_number(raise_number: int) -> int:
        """Every third raise resends the packet before it exactly."""
        return raise_number - 1 if raise_number % 3 == 2 else raise_number

    def agent(number: int) -> int:
        app = agent_celery(cluster)
        run = f"{prefix}-{number}"
        for raise_number in range(per_agent):
            question = raise_number // burst
            packet_id = f"esc-{packet_number(raise_number)}"
            raise_by_name(
                app, cluster, packet(run, question, severity="medium", packet_id=packet_id)
            )
            if raise_number % burst == burst - 1:
                time.sleep(SIZES.storm_seconds / questions)
        return per_agent

    started = time.monotonic()
    # When they all raise within a few seconds
    with ThreadPoolExecutor(SIZES.storm_agents) as pool:
        sent = sum(pool.map(agent, range(SIZES.storm_agents)))
    sent_in = round(time.monotonic() - started, 1)
    # Then every raise is a case or joined one: one case per distinct question
    distinct = SIZES.storm_agents * questions
    sent_packets = {
        (f"{prefix}-{a}", f"esc-{packet_number(n)}")
        for a in range(SIZES.storm_agents)
        for n in range(per_agent)
    }
    packets = len(sent_packets)

    def accounted() -> set[tuple[str, str]]:
        """(run, packet) pairs stored as a case or recorded as joining one."""
        stored = sql(
            cluster,
            "SELECT run_id, packet_id FROM escalations WHERE run_id LIKE :p",
            p=f"{prefix}%",
        )
        joined = sql(
            cluster,
            "SELECT e.run_id, v.detail->>'packet_id' FROM events v JOIN escalations e "
            "ON e.id = v.escalation_id WHERE e.run_id LIKE :p AND v.kind = 'joined'",
            p=f"{prefix}%",
        )
        return {(r[0], r[1]) for r in [*stored, *joined]}

    # (a resend of a packet is a repeat: only each packet's first arrival is waited for)
    wait_for(
        lambda: len(sent_packets - accounted()),
        lambda missing: missing == 0,
        timeout=SIZES.settle,
        what=f"all {packets} packets stored or joined",
    )
    intake_in = round(time.monotonic() - started, 1)
    rows = cases_of(cluster, prefix)
    by_run = Counter(row.id for row in rows)
    assert len(rows) == distinct, f"{len(rows)} cases for {distinct} distinct questions"
    # And each question is paged once
    wait_for(
        lambda: {i for p in cluster.sink.received() for i in by_run if i in p.text},
        lambda paged: len(paged) == distinct,
        timeout=SIZES.settle,
        what="a page for every question",
    )
    with httpx.Client() as client:
        for row in rows:
            assert reply_http(client, cluster, row.id, "approve", "ana").status_code == 200
    since = time.monotonic()
    result = audit(cluster, prefix, fault="raise storm", since=since, timeout=SIZES.settle)
    result.extra.update(
        raises=sent,
        agents=SIZES.storm_agents,
        distinct_packets=packets,
        questions=distinct,
        sent_in=sent_in,
        stored_or_joined_in=intake_in,
    )
    report(result)
    assert not result.problems(), explain(cluster, result)
