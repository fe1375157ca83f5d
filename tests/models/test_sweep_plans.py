"""The sweep's reads stay on their indexes under the plan a prepared statement ends up with.

psycopg prepares a statement it has run five times; PostgreSQL may then plan it once for
any parameters (a generic plan), blind to bound values. With the states bound, such a plan
can read every case or every outbox row on each sweep; written into the SQL, it cannot.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from bench.e2e import store_history
from models.db import transaction
from models.store import due_deliveries, due_escalations
from tests.support.stores import migrated_store

HISTORY = 3000  # closed cases, with four sent pages each: what a sweep must not read


@pytest.fixture
def busy_store(tmp_path: Path) -> Iterator[Engine]:
    with migrated_store(tmp_path, "postgresql") as engine:
        store_history(engine.url.render_as_string(hide_password=False), HISTORY)
        yield engine


def whole_reads(session: object) -> dict[str, int]:
    """Whole-table reads by this connection not yet reported to the statistics."""
    rows = session.execute(  # type: ignore[attr-defined]
        text(
            "SELECT relname, seq_scan FROM pg_stat_xact_user_tables "
            "WHERE relname IN ('escalations', 'deliveries')"
        )
    )
    return {name: int(count) for name, count in rows}


def test_a_sweep_reads_by_index_under_a_generic_plan(busy_store: Engine) -> None:
    # Given a store holding a long history, and plans made once for any parameters
    now = datetime.now(UTC)
    with transaction(busy_store) as session:
        session.execute(text("SET LOCAL plan_cache_mode = force_generic_plan"))
        before = whole_reads(session)
        # When the sweep looks for due cases and due outbox rows
        cases = due_escalations(session, now=now, stall_after=timedelta(minutes=2))
        rows = due_deliveries(session, now=now, pending_grace=timedelta(seconds=30))
        after = whole_reads(session)
    # Then nothing is due in the history, and neither table was read whole for it
    assert (list(cases), list(rows)) == ([], [])
    assert {name: after[name] - before[name] for name in after} == {
        "escalations": 0,
        "deliveries": 0,
    }
