"""The same open question raised at once by one run, many times (#16's storm found two cases
on PostgreSQL): every raise but the first joins it, whichever worker takes it."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from sqlmodel import Session, select

from models.db import make_engine
from models.settings import Settings
from models.tables import Escalation
from workers.intake import Accepted, accept
from workers.runtime import runtime_for
from workflows.examples import valid_packet

RAISES = 12


def accepted_at_once(runtime: Any, packets: list[dict[str, Any]]) -> list[Accepted]:
    """Each packet accepted by a thread of its own, all released at the same moment."""
    results: list[Accepted] = []
    start = threading.Barrier(len(packets))

    def accept_one(packet: dict[str, Any]) -> None:
        start.wait()
        results.append(accept(runtime, {"packet": packet}))

    threads = [threading.Thread(target=accept_one, args=(p,)) for p in packets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def stored(settings: Settings, condition: Any) -> list[Escalation]:
    engine = make_engine(settings)
    with Session(engine) as session:
        cases = list(session.exec(select(Escalation).where(condition)).all())
    engine.dispose()
    return cases


@pytest.mark.parametrize("backend", ["sqlite", "redis-postgres"], indirect=True)
def test_concurrent_raises_of_one_question_make_one_case(
    settings: Settings, celery_app: Any
) -> None:
    # Given one run asking one question, under as many packet ids as there are raises
    packets = [
        {**valid_packet(), "packet_id": f"esc-join-{n}", "blocked_on": "The one question."}
        for n in range(RAISES)
    ]
    # When every raise is stored at the same moment
    results = accepted_at_once(runtime_for(celery_app), packets)
    # Then there is one case; every other raise joined it
    cases = stored(settings, Escalation.run_id == "run-8842")
    assert len(cases) == 1, [c.packet_id for c in cases]
    assert sum(r.created for r in results) == 1
    assert sum(r.joined for r in results) == RAISES - 1
    assert {r.id for r in results} == {cases[0].id}


@pytest.mark.parametrize("backend", ["sqlite", "redis-postgres"], indirect=True)
def test_one_packet_sent_many_times_at_once_is_stored_once(
    settings: Settings, celery_app: Any
) -> None:
    # Given one packet whose sender retried it many times (lost responses)
    packet = {**valid_packet(), "packet_id": "esc-resent-1"}
    # When every copy is stored at the same moment
    results = accepted_at_once(runtime_for(celery_app), [dict(packet) for _ in range(RAISES)])
    # Then one case was created, and every copy answers with it
    cases = stored(settings, Escalation.packet_id == "esc-resent-1")
    assert len(cases) == 1 and len(results) == RAISES
    assert sum(r.created for r in results) == 1
    assert {r.id for r in results} == {cases[0].id}
