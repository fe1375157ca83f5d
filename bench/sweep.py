"""The sweeper's queries at 10 k, 100 k and 1 M open cases (target 2: 1 M ≤ 2 × 10 k).

Cases are bulk-inserted (COPY on PostgreSQL, executemany on SQLite) with small JSON
columns, each with one sent outbox row; 500 of them are due. Each size times one sweep
pass's reads (due cases, due outbox rows, overdue wake acknowledgements, open blocker
sets) and prints the plan of the due-cases query. Sizes grow in one database.

Run: .venv/bin/python -m bench.sweep [--sizes 10000,100000,1000000] [--backends sqlite,postgres]

`--keep DIR` (SQLite only) keeps each size's database in DIR/sqlite-<size> and reuses it on
the next run (a 1 M load takes about 11 minutes); a missing size is grown from a copy of the
one before. `--pragma name=value` (repeatable) is set on every SQLite connection after the
service's own settings, to time passes against the same file with other settings.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.engine import Engine

from bench.common import Figure, postgres_database, verdict
from models.state_files import private_file

TARGET = 2.0
DUE = 500
CASE_COLUMNS = (
    "id", "run_id", "packet_id", "severity", "trigger_type", "state", "options", "wake",
    "problems", "attempts", "next_action_at", "created_at", "updated_at", "wake_redeliveries",
    "extended_seconds", "question_key",
)  # fmt: skip
DELIVERY_COLUMNS = (
    "escalation_id", "purpose", "channel", "target", "role", "title", "body", "payload", "state",
    "attempts", "next_attempt_at", "sent_at", "created_at",
)  # fmt: skip


def case_rows(start: int, stop: int, now: datetime) -> Iterator[tuple[Any, ...]]:
    due = now - timedelta(minutes=1)
    for i in range(start, stop):
        # deadlines spread over the next days, last writes over the past ones
        when = due if i < DUE else now + timedelta(hours=1, seconds=i % 400_000)
        written = now - timedelta(minutes=5, seconds=i % 400_000)
        yield (
            f"{i:012x}", f"run-{i}", "p", "medium", "uncertain", "awaiting", "[]", "{}",
            "[]", 0, when, written, written, 0, 0, f"q{i}",
        )  # fmt: skip


def delivery_rows(start: int, stop: int, now: datetime) -> Iterator[tuple[Any, ...]]:
    for i in range(start, stop):
        yield (
            f"{i:012x}", "page", "apprise", "json://sink/ops", "primary", "t", "b", "{}",
            "sent", 1, now, now, now,
        )  # fmt: skip


def bulk_insert(engine: Engine, start: int, stop: int, now: datetime) -> None:
    """Rows start..stop, in chunks, the fastest way each database takes them."""
    chunk = 50_000
    for low in range(start, stop, chunk):
        high = min(stop, low + chunk)
        raw = engine.raw_connection()
        try:
            if engine.dialect.name == "postgresql":
                cursor = raw.cursor()
                for table, columns, rows in (
                    ("escalations", CASE_COLUMNS, case_rows(low, high, now)),
                    ("deliveries", DELIVERY_COLUMNS, delivery_rows(low, high, now)),
                ):
                    buffer = io.StringIO()
                    csv.writer(buffer).writerows(rows)
                    with cursor.copy(  # type: ignore[attr-defined]
                        f"COPY {table} ({', '.join(columns)}) FROM STDIN WITH (FORMAT csv)"
                    ) as copy:
                        copy.write(buffer.getvalue())
            else:
                cursor = raw.cursor()
                cursor.execute("BEGIN")
                for table, columns, rows in (
                    ("escalations", CASE_COLUMNS, case_rows(low, high, now)),
                    ("deliveries", DELIVERY_COLUMNS, delivery_rows(low, high, now)),
                ):
                    marks = ", ".join("?" for _ in columns)
                    cursor.executemany(
                        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})",
                        ((*(v.isoformat(" ") if isinstance(v, datetime) else v for v in row),)
                         for row in rows),
                    )  # fmt: skip
                cursor.execute("COMMIT")
            raw.commit()
        finally:
            raw.close()
    if engine.dialect.name == "postgresql":  # as autovacuum would; the service never runs
        with engine.begin() as connection:  # ANALYZE on SQLite, so neither does this
            connection.execute(text("ANALYZE"))


def sweep_reads(engine: Engine, now: datetime, session_class: Any = None) -> int:
    """One sweep pass's reads, with the sweeper's limits; returns the due cases found."""
    from sqlmodel import Session, col, select

    from models.store import due_deliveries, due_escalations
    from models.tables import Escalation, TaskWait

    with (session_class or Session)(engine) as session:
        due = due_escalations(session, now=now, stall_after=timedelta(seconds=30))
        due_deliveries(session, now=now, pending_grace=timedelta(seconds=30), limit=500)
        session.exec(
            select(Escalation)
            .where(col(Escalation.ack_due_at) <= now, col(Escalation.resumed_at).is_(None))
            .limit(200)
        ).all()
        session.exec(select(TaskWait).where(col(TaskWait.woken_at).is_(None))).all()
        session.rollback()
    return len(due)


def plan(engine: Engine, now: datetime) -> str:
    from sqlmodel import Session

    captured: list[Any] = []

    class Capture(Session):
        def exec(self, statement: Any, **kw: Any) -> Any:  # type: ignore[override]
            captured.append(statement)
            return super().exec(statement, **kw)

    sweep_reads(engine, now, Capture)
    explain = "EXPLAIN" if engine.dialect.name == "postgresql" else "EXPLAIN QUERY PLAN"
    lines = []
    with engine.connect() as connection:
        for name, statement in zip(QUERIES, captured, strict=True):
            lines.append(f"  {name}:")
            compiled = statement.compile(engine, compile_kwargs={"literal_binds": True})
            rows = connection.execute(text(f"{explain} {compiled}")).all()
            lines += ["      " + " ".join(str(c) for c in row) for row in rows]
    return "\n".join(lines)


QUERIES = (
    "due cases, past their deadline",
    "due cases, stalled",
    "due outbox rows, pending",
    "due outbox rows, failed or unknown",
    "due outbox rows, lease expired",
    "overdue acknowledgements",
    "open blocker sets",
)


@contextmanager
def backend_engine(backend: str, folder: Path, pragmas: Sequence[str] = ()) -> Iterator[Engine]:
    from models.db import make_engine
    from models.migrate import upgrade
    from models.settings import Settings

    @contextmanager
    def url() -> Iterator[str | None]:
        if backend == "postgres":
            with postgres_database() as found:
                yield found
        else:
            yield None

    with url() as database_url:
        settings = Settings(home=folder / backend, database_url=database_url)
        upgrade(settings)
        engine = make_engine(settings)
        if pragmas:

            @event.listens_for(engine, "connect")
            def on_connect(dbapi_connection: Any, _record: Any) -> None:
                for pragma in pragmas:
                    dbapi_connection.execute(f"PRAGMA {pragma}")

        try:
            yield engine
        finally:
            engine.dispose()


Result = tuple[Figure, Figure, float, str, Figure | None]


def time_passes(engine: Engine, now: datetime, runs: int) -> tuple[Figure, Figure]:
    """`runs` passes with the 500 due, then `runs` with none due (after a warming pass)."""
    before = now - timedelta(minutes=2)  # the 500 are not due yet: the pass finds nothing
    found = sweep_reads(engine, now)  # warm the cache, and check the due count
    assert found == 100, f"{found} due cases found, the sweeper's limit of 100 expected"
    assert sweep_reads(engine, before) == 0
    figures = []
    for moment in (now, before):
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            sweep_reads(engine, moment)
            times.append(time.perf_counter() - started)
        figures.append(Figure(tuple(times)))
    return figures[0], figures[1]


def measure(backend: str, sizes: list[int], runs: int) -> dict[int, Result]:
    """Per size: a pass with 500 due, a pass with none due, the load time, the plan."""
    results: dict[int, Result] = {}
    now = datetime.now(UTC)
    with tempfile.TemporaryDirectory() as tmp, backend_engine(backend, Path(tmp)) as engine:
        stored = 0
        for size in sizes:
            started = time.perf_counter()
            bulk_insert(engine, stored, size, now)
            loaded, stored = time.perf_counter() - started, size
            due, idle = time_passes(engine, now, runs)
            results[size] = (due, idle, loaded, plan(engine, now - timedelta(minutes=2)), None)
    return results


def cold_pass(folder: Path, now: datetime, pragmas: Sequence[str]) -> float:
    """A new engine's first pass (500 due) with this file out of the OS page cache."""
    database = os.open(folder / "sqlite" / "escalate.sqlite", os.O_RDONLY)
    try:  # only this file's clean pages are dropped; other work on the machine keeps its own
        os.posix_fadvise(database, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(database)
    with backend_engine("sqlite", folder, pragmas) as engine:
        started = time.perf_counter()
        sweep_reads(engine, now)
        return time.perf_counter() - started


def measure_kept(
    keep: Path, sizes: list[int], runs: int, pragmas: Sequence[str]
) -> dict[int, Result]:
    """As `measure` on SQLite, each size's database kept in `keep` and reused if there."""
    results: dict[int, Result] = {}
    previous: Path | None = None
    for size in sizes:
        folder = keep / f"sqlite-{size}"
        marker = folder / "loaded.json"
        loaded = 0.0
        if not marker.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            stored, now = 0, datetime.now(UTC)
            if previous is not None:  # grow a copy of the size before, through SQLite
                kept = json.loads((previous / "loaded.json").read_text())
                stored, now = kept["size"], datetime.fromisoformat(kept["now"])
                source = sqlite3.connect(previous / "sqlite" / "escalate.sqlite")
                target = sqlite3.connect(private_file(folder / "sqlite" / "escalate.sqlite"))
                source.backup(target)
                source.close()
                target.close()
            with backend_engine("sqlite", folder) as engine:
                started = time.perf_counter()
                bulk_insert(engine, stored, size, now)
                loaded = time.perf_counter() - started
            marker.write_text(json.dumps({"size": size, "now": now.isoformat()}))
        now = datetime.fromisoformat(json.loads(marker.read_text())["now"])
        with backend_engine("sqlite", folder, pragmas) as engine:
            due, idle = time_passes(engine, now, runs)
            shown = plan(engine, now - timedelta(minutes=2))
        cold = Figure(tuple(cold_pass(folder, now, pragmas) for _ in range(runs)))
        results[size] = (due, idle, loaded, shown, cold)
        previous = folder
    return results


def report(
    sizes: list[int],
    backends: list[str],
    runs: int,
    *,
    keep: Path | None = None,
    pragmas: Sequence[str] = (),
) -> None:
    for backend in backends:
        if keep is not None and backend == "sqlite":
            results = measure_kept(keep, sizes, runs, pragmas)
        else:
            results = measure(backend, sizes, runs)
        print(f"one sweep pass's reads, {backend}: with {DUE} due / with none due")
        for size, (due, idle, loaded, _plan, cold) in results.items():
            print(
                f"  {size:>9,} open cases: {due.show(' ms', 1000)} / {idle.show(' ms', 1000)}"
                + (f" (loaded in {loaded:.0f} s)" if loaded else " (kept)")
            )
            if cold is not None:
                print(f"      first pass, file out of the OS cache: {cold.show(' ms', 1000)}")
        ratios = [(0, f"{DUE} due"), (1, "none due")]
        if results[sizes[0]][4] is not None:
            ratios.append((4, "first pass, cold file"))
        for which, name in ratios:
            last, first = results[sizes[-1]][which], results[sizes[0]][which]
            assert isinstance(last, Figure) and isinstance(first, Figure)
            ratio = last.median / first.median
            print(
                f"  {name}: {sizes[-1]:,} / {sizes[0]:,} = {ratio:.2f} — "
                f"{verdict(ratio, TARGET, at_most=True)}"
            )
        print(f"  plans at {sizes[-1]:,}, none due:\n{results[sizes[-1]][3]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="keep and reuse SQLite databases here")
    parser.add_argument("--pragma", action="append", default=[], help="e.g. cache_size=-65536")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    report(sizes, args.backends.split(","), args.runs, keep=args.keep, pragmas=args.pragma)


if __name__ == "__main__":
    main()
