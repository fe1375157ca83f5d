"""After a chaos run: what SPEC §9 promises, checked from SQL, the sink, the agent and the logs."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import create_engine, text

from tests.chaos.cluster import Cluster, elapsed

TERMINAL = ("closed", "refused", "dead_letter")


@dataclass
class Audit:
    """The figures of one run; `problems()` lists every broken promise."""

    fault: str
    cases: int = 0
    closed: int = 0
    lost: list[str] = field(default_factory=list)  # accepted, never reached a terminal state
    parked: list[str] = field(default_factory=list)  # dead_letter: visible, but not closed
    double_decisions: list[str] = field(default_factory=list)
    closed_without_decision: list[str] = field(default_factory=list)
    double_follow_ups: list[str] = field(default_factory=list)
    # a default is applied only once the window passed: without its one follow-up, a stage
    # was skipped
    defaults_without_follow_up: list[str] = field(default_factory=list)
    pages: int = 0
    duplicate_pages: int = 0
    duplicate_allowance: int = 0
    unwoken: list[str] = field(default_factory=list)
    duplicate_wakes: int = 0
    # repeats of a run's wake beyond the times it was sent again for a late acknowledgement
    unexplained_wakes: int = 0
    not_acknowledged: list[str] = field(default_factory=list)
    secret_found_in: list[str] = field(default_factory=list)
    recovered_in: float = 0.0  # seconds from the end of the fault to the last close
    extra: dict[str, Any] = field(default_factory=dict)

    def problems(self) -> list[str]:
        found = [
            f"{name}: {value}"
            for name in (
                "lost",
                "parked",
                "double_decisions",
                "closed_without_decision",
                "double_follow_ups",
                "defaults_without_follow_up",
                "unwoken",
                "not_acknowledged",
                "secret_found_in",
            )
            if (value := getattr(self, name))
        ]
        if self.duplicate_pages > self.duplicate_allowance:
            found.append(
                f"duplicate pages: {self.duplicate_pages} > {self.duplicate_allowance} allowed"
            )
        # A run is woken once: again only when its acknowledgement was late (recorded as a
        # redelivery) or a fault hit between the wake's send and its record
        if self.unexplained_wakes > self.duplicate_allowance:
            found.append(
                f"duplicate wakes: {self.unexplained_wakes} not sent again for a late "
                f"acknowledgement > {self.duplicate_allowance} allowed"
            )
        return found

    def ids_in_question(self) -> list[str]:
        """The cases a broken promise names, for `explain`."""
        names = (
            "lost",
            "parked",
            "double_decisions",
            "closed_without_decision",
            "defaults_without_follow_up",
            "unwoken",
        )
        return sorted({i for name in (*names, "not_acknowledged") for i in getattr(self, name)})

    def figures(self) -> dict[str, Any]:
        figures = {
            key: (len(value) if isinstance(value, list) else value)
            for key, value in asdict(self).items()
            if key != "extra"
        }
        return {**figures, **self.extra}


def sql(cluster: Cluster, statement: str, **params: Any) -> list[Any]:
    engine = create_engine(cluster.settings.resolved_database_url, pool_pre_ping=True)
    try:
        with engine.connect() as connection:
            return list(connection.execute(text(statement), params))
    finally:
        engine.dispose()


def cases_of(cluster: Cluster, prefix: str) -> list[Any]:
    return sql(
        cluster,
        "SELECT id, state, resumed_at, wake, wake_redeliveries FROM escalations "
        "WHERE run_id LIKE :p",
        p=f"{prefix}%",
    )


def settled(cluster: Cluster, prefix: str, *, woken: bool) -> bool:
    """Every case terminal, and (when runs are woken) every closed case acknowledged."""
    try:
        rows = cases_of(cluster, prefix)
    except Exception:  # the database may still be coming back
        return False
    return all(
        row.state in TERMINAL
        and (not woken or row.state != "closed" or not row.wake or row.resumed_at is not None)
        for row in rows
    )


def audit(
    cluster: Cluster,
    prefix: str,
    *,
    fault: str,
    since: float,
    timeout: float,
    allowance: int = 0,
) -> Audit:
    """Wait (up to `timeout`) for the run's cases to settle, then check every promise; the
    secrets seeded into the cluster so far (`drive.seed_secret`) must show nowhere."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not settled(cluster, prefix, woken=True):
        time.sleep(0.3)
    report = Audit(fault=fault, recovered_in=elapsed(since), duplicate_allowance=allowance)
    rows = cases_of(cluster, prefix)
    ids = {row.id for row in rows}
    report.cases = len(rows)
    report.closed = sum(row.state == "closed" for row in rows)
    report.lost = sorted(row.id for row in rows if row.state not in TERMINAL)
    report.parked = sorted(row.id for row in rows if row.state == "dead_letter")
    decisions = Counter(
        r.escalation_id
        for r in sql(
            cluster,
            "SELECT d.escalation_id FROM decisions d JOIN escalations e "
            "ON e.id = d.escalation_id WHERE e.run_id LIKE :p",
            p=f"{prefix}%",
        )
    )
    report.double_decisions = sorted(i for i, n in decisions.items() if n > 1)
    closed = [row for row in rows if row.state == "closed"]
    report.closed_without_decision = sorted(r.id for r in closed if r.id not in decisions)
    follow_ups = Counter(
        r.escalation_id
        for r in sql(
            cluster,
            "SELECT v.escalation_id FROM events v JOIN escalations e ON e.id = v.escalation_id "
            "WHERE e.run_id LIKE :p AND v.kind = 'followed_up'",
            p=f"{prefix}%",
        )
    )
    report.double_follow_ups = sorted(i for i, n in follow_ups.items() if n > 1)
    # the clock's default, not a decision copied from another case (a delivery failure's)
    defaulted = sql(
        cluster,
        "SELECT v.escalation_id FROM events v JOIN escalations e ON e.id = v.escalation_id "
        "WHERE e.run_id LIKE :p AND v.kind = 'timeout_default'",
        p=f"{prefix}%",
    )
    report.defaults_without_follow_up = sorted(
        r.escalation_id for r in defaulted if follow_ups[r.escalation_id] != 1
    )
    pages = pages_by_case(cluster, ids)
    report.pages = sum(pages.values())
    report.duplicate_pages = sum(n - 1 for n in pages.values())
    wakes = Counter(w.get("wake_id") for w in cluster.agent.wakes() if w.get("wake_id") in ids)
    woken = [row for row in closed if row.wake]
    report.unwoken = sorted(r.id for r in woken if r.id not in wakes)
    report.duplicate_wakes = sum(n - 1 for n in wakes.values())
    report.unexplained_wakes = unexplained_wakes(wakes, {r.id: r.wake_redeliveries for r in woken})
    report.not_acknowledged = sorted(r.id for r in woken if r.resumed_at is None)
    report.secret_found_in = places_holding(cluster, cluster.seeded)
    return report


def unexplained_wakes(wakes: Counter[str], sent_again: dict[str, int]) -> int:
    """Each run's wakes past its first and past those it was sent again: one case's late
    acknowledgements never excuse another's repeat."""
    return sum(max(0, n - 1 - sent_again.get(wake_id, 0)) for wake_id, n in wakes.items())


def pages_by_case(cluster: Cluster, ids: set[str]) -> Counter[tuple[str, str, str]]:
    """Notifications the channel took (or maybe took: it hung), by (case, recipient path,
    title); a 500 is a definite refusal, not a page."""
    counted: Counter[tuple[str, str, str]] = Counter()
    for post in cluster.sink.received():
        if post.mode == "500":
            continue
        body = post.body if isinstance(post.body, dict) else {}
        found = [i for i in ids if i in post.text]
        for case_id in found[:1]:
            counted[(case_id, post.path, str(body.get("title", "")))] += 1
    return counted


def places_holding(cluster: Cluster, seeded: Sequence[str]) -> list[str]:
    """Where a seeded secret shows: the sink's bodies, any database row, any log."""
    if not seeded:
        return []

    def holds(found_text: str) -> bool:
        return any(secret in found_text for secret in seeded)

    found = []
    if any(holds(post.text) for post in cluster.sink.received()):
        found.append("sink")
    tables = sql(
        cluster, "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"
    )
    for (table,) in tables:
        rows = sql(cluster, f'SELECT row_to_json(t)::text FROM "{table}" t')
        if any(holds(row[0]) for row in rows):
            found.append(f"database:{table}")
    if holds(cluster.logs()):
        found.append("logs")
    return found


def explain(cluster: Cluster, audit: Audit) -> str:
    """The broken promises, and for a few cases they name, the state and the last events."""
    lines = audit.problems()
    for case_id in audit.ids_in_question()[:5]:
        events = sql(
            cluster,
            "SELECT kind, state FROM events WHERE escalation_id = :i ORDER BY id",
            i=case_id,
        )
        lines.append(f"{case_id}: " + " > ".join(f"{e.kind}({e.state})" for e in events[-6:]))
    for log in sorted(cluster.folder.glob("*.log")):  # what the processes said, last lines
        tail = log.read_text(errors="replace").splitlines()[-12:]
        lines += [f"--- {log.name}", *tail]
    return "\n".join(lines)
