"""A channel that fails, then hangs: every page still gets through, and a page is repeated
only where the channel's silence left it maybe sent."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.chaos.auditor import audit, cases_of, explain
from tests.chaos.cluster import Cluster, wait_for
from tests.chaos.drive import packet, raise_http, reply_http, report, run_prefix
from tests.chaos.sizes import SIZES

pytestmark = pytest.mark.timeout(SIZES.settle * 3)


def test_a_sink_answering_500_then_hanging_delays_pages_and_loses_none(cluster: Cluster) -> None:
    # Given a channel that answers 500 to everything
    prefix = run_prefix("sink")
    cluster.sink.mode = "500"
    with httpx.Client() as client:
        ids = []
        for index in range(SIZES.sink_cases):
            body = packet(f"{prefix}-{index % 3}", index, severity="medium")
            response = raise_http(client, cluster, body)
            assert response.status_code == 201, response.text
            ids.append(response.json()["id"])
        wait_for(
            lambda: {i for p in cluster.sink.received() for i in ids if i in p.text},
            lambda paged: len(paged) == len(ids),
            timeout=SIZES.settle,
            what="a failed page for every case",
        )
        # When it then hangs past the send timeout, and at last comes back
        cluster.sink.mode = "hang"
        time.sleep(cluster.settings.send_timeout * 2)
        cluster.sink.mode = "ok"
        since = time.monotonic()
        # And a new case's page is the first send that works there (no probe pages anyone:
        # without new traffic the held pages wait for the cases' own follow-ups)
        fresh = raise_http(
            client, cluster, packet(f"{prefix}-3", SIZES.sink_cases, severity="medium")
        )
        assert fresh.status_code == 201, fresh.text
        ids.append(fresh.json()["id"])
        # Then every case's page is delivered
        wait_for(
            lambda: {
                i for p in cluster.sink.received() if p.mode == "ok" for i in ids if i in p.text
            },
            lambda paged: len(paged) == len(ids),
            timeout=SIZES.settle,
            what="a delivered page for every case",
        )
        delivered_in = round(time.monotonic() - since, 1)
        for case_id in ids:
            assert reply_http(client, cluster, case_id, "approve", "ana").status_code == 200
    hung = [
        p for p in cluster.sink.received() if p.mode == "hang" and any(i in p.text for i in ids)
    ]
    result = audit(
        cluster,
        prefix,
        fault="sink 500 then hang",
        since=since,
        timeout=SIZES.settle,
        allowance=len(hung),
    )
    failed = [
        p for p in cluster.sink.received() if p.mode == "500" and any(i in p.text for i in ids)
    ]
    result.extra.update(answered_500=len(failed), hung=len(hung), delivered_in=delivered_in)
    report(result)
    states = {row.state for row in cases_of(cluster, prefix)}
    assert states == {"closed"}, states
    assert not result.problems(), explain(cluster, result)
