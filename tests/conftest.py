"""Shared fixtures: a local HTTP sink, the process's shared workers; the slowest tests first."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support.shared_worker import SharedWorkers
from tests.support.sink import HttpSink, start_sink


@pytest.fixture
def sink() -> Iterator[HttpSink]:
    server = start_sink()
    yield server
    server.server.shutdown()
    server.server.server_close()


@pytest.fixture(scope="session")
def shared_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedWorkers]:
    """This test process's Celery workers, one per broker, lent to one live test at a time.
    Defined once, here: a second set in the same process would run a second Redis worker,
    and kombu keeps one event loop per process."""
    workers = SharedWorkers(tmp_path_factory.mktemp("shared-worker") / "home")
    yield workers
    workers.stop()


# The tests that take longest at full suite load (`--durations`, 2026-12-03), longest first.
# A prefix ending in "/" or ".py" is one unit, its seconds for all its items: its module or
# session fixtures (a deployment, a database per backend, a fuzzed app) are made once per
# process, so its items stay together. Any other prefix's items are units one by one, its
# seconds for each.
HEAVY: tuple[tuple[str, float], ...] = (
    ("tests/workers/test_blocker_orders.py", 57),
    ("tests/security/test_schemathesis.py", 55),
    ("tests/chaos/", 48),
    ("tests/api/test_claude_hook.py::test_allowed_at_once_or_by_a_person", 37),
    ("tests/bench/test_benchmarks_run.py::test_the_end_to_end", 34),
    ("tests/api/test_first_minutes.py::test_escalate_wait_rides_out", 30),
    ("tests/api/test_claude_hook.py::test_a_defaulted_case_denies", 29),
    ("tests/api/test_console_browser.py", 26),  # one Chromium for the module
    ("tests/workers/test_intake_outage.py::test_raises_sent_while", 25),
    ("tests/api/test_serve.py::test_kill_9_while_waiting", 24),
    ("tests/api/test_serve.py::test_kill_9_right_after_intake", 23),
    ("tests/api/test_first_minutes.py::test_a_second_serve_refuses", 20),
    ("tests/workers/test_intake_killed.py::", 19),
    ("tests/api/test_langgraph.py::test_an_interrupt_is_decided", 18),
    ("tests/api/test_serve.py::test_an_answer_link_over_real_http", 18),
    ("tests/api/test_recovery_cli.py::test_stats_reports", 16),
    ("tests/workers/test_chains.py::TestAnAcknowledgement::test_stops_a_chain", 16),
    ("tests/api/test_first_minutes.py::test_serve_shows_its_url", 15),
    ("tests/api/test_serve.py::test_sigterm_or_ctrl_c", 15),
    ("tests/security/test_no_case_lost.py::", 14),
    ("tests/workers/test_chains.py::TestWorkingHours::", 13),
    ("tests/workers/test_faults.py::", 12),
    ("tests/workers/test_delivery_failures.py::TestAHangThatOutlastsASuccess::", 12),
    ("tests/workers/test_chains.py::TestAHold::", 10),
    ("tests/workers/test_recovery.py::test_the_dashboard_shows_a_parked_case", 10),
    ("tests/api/test_mcp_server.py::test_an_agent_raises_waits_and_resumes", 10),
    ("tests/workers/test_recovery.py::test_a_parked_case_is_retried", 9),
)
# The rest of a slice runs live tests (a worker, a served app, a browser) before pure ones:
# what is left at a slice's end, to run last or be stolen, takes milliseconds.
LIVE = ("tests/workers/", "tests/api/", "tests/security/", "tests/bench/", "tests/chaos/")


def _heavy(nodeid: str) -> tuple[str, float] | None:
    return next(((p, s) for p, s in HEAVY if nodeid.startswith(p)), None)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each process starts with its share of the slowest tests. xdist's work stealing hands
    process k the k-th contiguous slice of this order and steals from a slice's end, so a
    slow test left late in a slice ran alone at the end of the run (vmstat: a core idle for
    the last 25 s). Units go longest first to the slice with the least heavy work so far.
    The slices are cut as `make test` runs them: items `-k`, `-m` or `--lf` drop afterwards,
    or a head longer than its slice, shift the cuts (harmless: only the order changes)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    units: dict[str, list[pytest.Item]] = {}
    weight: dict[str, float] = {}
    light: list[pytest.Item] = []
    for item in items:
        found = _heavy(item.nodeid)
        if found is None:
            light.append(item)
            continue
        prefix, seconds = found
        key = prefix if prefix.endswith(("/", ".py")) else item.nodeid
        units.setdefault(key, []).append(item)
        weight[key] = seconds
    heads: list[list[pytest.Item]] = [[] for _ in range(max(workers, 1))]
    load = [0.0] * len(heads)
    for key in sorted(units, key=lambda k: -weight[k]):
        least = load.index(min(load))
        heads[least] += units[key]
        load[least] += weight[key]
    # Slice k is len(rest) // (workers - k) of what is left, as xdist cuts it
    ordered: list[pytest.Item] = []
    for k, head in enumerate(heads):
        size = (len(items) - len(ordered)) // (len(heads) - k)
        take = max(0, size - len(head))
        rest = sorted(light[:take], key=lambda item: not item.nodeid.startswith(LIVE))
        ordered += head + rest
        del light[:take]
    items[:] = ordered + light
