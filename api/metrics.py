"""The figures on /metrics (prometheus-client) and the console's insights page, read from SQL.

Every figure is aggregated by the database and only the columns it needs are read: at
100,000 closed cases a scrape that loaded the tables as ORM rows took 20 s.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from prometheus_client.core import (
    CollectorRegistry,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import generate_latest
from sqlalchemy import Engine, case, func
from sqlalchemy import select as sa_select
from sqlalchemy.sql import ColumnElement
from sqlmodel import Session, col, select

from models.sql import one_of
from models.store import as_utc, oldest_open_at
from models.tables import Decision, Delivery, Escalation, Reply
from workers.wake_acks import not_resumed_count
from workflows.insights import Decided, Insights, insights
from workflows.judgement import ReplyOutcome
from workflows.states import OPEN

# Seconds: a minute to a week, the span of human waits.
BUCKETS = (1, 5, 15, 60, 300, 900, 1800, 3600, 4 * 3600, 24 * 3600, 7 * 24 * 3600)
STAGES = (  # stage → (from, to) timestamps of the case
    ("route", "created_at", "routed_at"),
    ("decide", "routed_at", "decided_at"),
    ("close", "decided_at", "closed_at"),
)
NOT_DECIDING = (ReplyOutcome.AMBIGUOUS, ReplyOutcome.COMMENT, ReplyOutcome.NEEDS_CONFIRMATION)
# The insights page reads the latest decisions only (ix_decisions_at): a page, not a report.
INSIGHTS_WINDOW = 5_000


def seconds_between(db: Session, start: Any, end: Any) -> ColumnElement[Any]:
    """`end - start` in seconds, never below 0, NULL when either is: in the database's dialect."""
    if db.get_bind().dialect.name == "postgresql":
        # date_part is EXTRACT(EPOCH ...) as a float: the numeric EXTRACT took twice the time
        raw: ColumnElement[Any] = func.date_part("epoch", end - start)
    else:
        # julianday is a float of days: rounded to the millisecond to drop its noise at bucket
        # edges (a span within a millisecond of an edge may fall either side on SQLite)
        raw = func.round((func.julianday(end) - func.julianday(start)) * 86400.0, 3)
    return case((raw < 0, 0.0), else_=raw)


def _computed_once(db: Session, query: Any, name: str) -> Any:
    """`query` as a CTE PostgreSQL computes once: inlined, each bucket's test would work the
    seconds out again (three times the time at 100,000 cases). SQLite before 3.35 has no
    MATERIALIZED; there the CTE is left to its planner."""
    cte = query.cte(name)
    return cte.prefix_with("MATERIALIZED") if db.get_bind().dialect.name == "postgresql" else cte


def _spread(seconds: Any) -> list[ColumnElement[Any]]:
    """A histogram's aggregates over `seconds`: count, sum, then one count per bucket (≤)."""
    return [
        func.count(seconds),
        func.coalesce(func.sum(seconds), 0.0),
        *(func.count().filter(seconds <= bucket) for bucket in BUCKETS),
    ]


def _add_series(family: HistogramMetricFamily, labels: list[str], spread: Sequence[Any]) -> None:
    count, total, *cumulative = spread
    if not count:  # no value for these labels: no series, as before
        return
    buckets = [(str(float(b)), int(n)) for b, n in zip(BUCKETS, cumulative, strict=True)]
    family.add_metric(labels, [*buckets, ("+Inf", int(count))], float(total))


def _open_cases(db: Session, now: datetime) -> Iterator[Metric]:
    is_open = one_of(col(Escalation.state), OPEN)
    family = GaugeMetricFamily("escalate_open_cases", "Open cases", labels=["state", "severity"])
    for state, severity, count in db.exec(
        select(Escalation.state, Escalation.severity, func.count())
        .where(is_open)
        .group_by(Escalation.state, Escalation.severity)
    ).all():
        family.add_metric([str(state), severity], count)
    yield family
    oldest = oldest_open_at(db)
    yield GaugeMetricFamily(
        "escalate_oldest_open_age_seconds",
        "Age of the oldest open case (0 when none is open)",
        value=(now - oldest).total_seconds() if oldest else 0.0,
    )


def _deliveries(db: Session) -> Metric:
    family = GaugeMetricFamily("escalate_deliveries", "Deliveries by outcome", labels=["state"])
    for state, count in db.exec(
        select(Delivery.state, func.count()).group_by(Delivery.state)
    ).all():
        family.add_metric([str(state)], count)
    return family


def _stage_latency(db: Session) -> Metric:
    stages = sorted(stage for stage, _start, _end in STAGES)
    took = {
        stage: seconds_between(db, getattr(Escalation, start), getattr(Escalation, end))
        for stage, start, end in STAGES
    }
    spans = _computed_once(db, select(*(took[stage].label(stage) for stage in stages)), "spans")
    row = db.exec(select(*(agg for stage in stages for agg in _spread(spans.c[stage])))).one()
    family = HistogramMetricFamily(
        "escalate_stage_latency_seconds", "Time each stage took", labels=["stage"]
    )
    width = len(BUCKETS) + 2
    for i, stage in enumerate(stages):
        _add_series(family, [stage], row[i * width : (i + 1) * width])
    return family


def _decisions(db: Session) -> Iterator[Metric]:
    """Time to a person's decision per (tier, channel), and per tier the share of defaults."""
    default = col(Decision.is_default)
    cases = _computed_once(
        db,
        select(
            col(Escalation.severity).label("tier"),
            col(Decision.channel).label("channel"),
            default.label("is_default"),
            # a default is no person's decision: no time to count
            case((~default, seconds_between(db, Escalation.routed_at, Decision.at))).label("took"),
        ).join(Decision, col(Decision.escalation_id) == col(Escalation.id)),
        "decided",
    )
    rows = db.exec(
        select(
            cases.c.tier,
            cases.c.channel,
            func.count(),
            func.count().filter(cases.c.is_default),
            *_spread(cases.c.took),
        )
        .group_by(cases.c.tier, cases.c.channel)
        .order_by(cases.c.tier, cases.c.channel)
    ).all()
    times = HistogramMetricFamily(
        "escalate_time_to_decision_seconds",
        "Routed to a person's decision, per tier and channel",
        labels=["tier", "channel"],
    )
    per_tier: dict[str, tuple[int, int]] = {}
    for row in rows:
        tier, channel, decided, defaulted = row[:4]
        _add_series(times, [tier, channel], row[4:])
        before = per_tier.get(tier, (0, 0))
        per_tier[tier] = (before[0] + decided, before[1] + defaulted)
    yield times
    rate = GaugeMetricFamily(
        "escalate_default_applied_ratio",
        "Share of decided cases where the timeout default applied",
        labels=["tier"],
    )
    for tier, (decided, defaulted) in sorted(per_tier.items()):
        rate.add_metric([tier], defaulted / decided)
    yield rate


class SqlCollector:
    """Reads the figures at scrape time: nothing is kept in the process between scrapes."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def collect(self) -> Iterator[Metric]:
        now = datetime.now(UTC)
        with Session(self.engine) as db:
            yield from _open_cases(db, now)
            yield GaugeMetricFamily(
                "escalate_decided_not_resumed",
                "Closed cases whose run never acknowledged its wake",
                value=not_resumed_count(db),
            )
            yield _deliveries(db)
            yield _stage_latency(db)
            yield from _decisions(db)


def exposition(engine: Engine) -> bytes:
    """The Prometheus text format of every figure, read now."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SqlCollector(engine))  # type: ignore[arg-type]
    return generate_latest(registry)


# Newest first, ties (defaults applied by one sweep share their time) in a fixed order: the
# figures and the reply counts then read the same decisions.
_NEWEST = (col(Decision.at).desc(), col(Decision.id).desc())


def _latest(window: int) -> Any:
    """The cases of the newest `window` decisions (read from the end of ix_decisions_at)."""
    return select(Decision.escalation_id).order_by(*_NEWEST).limit(window)


def decided_cases(db: Session, *, window: int = INSIGHTS_WINDOW) -> list[Decided]:
    """The newest `window` decisions, with only the columns the insights read."""
    rows = db.execute(
        sa_select(
            col(Escalation.severity),
            col(Escalation.trigger_type),
            col(Escalation.run_id),
            col(Decision.channel),
            col(Decision.option),
            col(Decision.is_default),
            col(Escalation.routed_at),
            col(Decision.at),
        )
        .select_from(Decision)
        .join(Escalation, col(Escalation.id) == col(Decision.escalation_id))
        .order_by(*_NEWEST)
        .limit(window)
    ).all()
    return [
        Decided(severity, trigger, run, channel, option, is_default, as_utc(routed), as_utc(at))
        for severity, trigger, run, channel, option, is_default, routed, at in rows
    ]


def figures(db: Session, *, window: int = INSIGHTS_WINDOW) -> Insights:
    """The insights over the newest `window` decisions, and how many of their cases' replies
    needed asking again."""
    by_outcome = dict(
        db.exec(
            select(Reply.outcome, func.count())
            .where(col(Reply.escalation_id).in_(_latest(window)))
            .group_by(Reply.outcome)
        ).all()
    )
    unclear = sum(n for outcome, n in by_outcome.items() if outcome in NOT_DECIDING)
    return insights(
        decided_cases(db, window=window),
        replies=sum(by_outcome.values()),
        undecided_replies=unclear,
    )


def covered(found: Insights, *, window: int = INSIGHTS_WINDOW) -> str:
    """What the figures cover, said on the page."""
    if not found.decided or found.since is None:
        return "No case has been decided yet."
    since = found.since.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    if found.decided < window:
        return f"Every decision so far: {found.decided:,}, since {since}."
    return f"The latest {window:,} decisions, since {since}."


def insight_rows(found: Insights) -> dict[str, Any]:
    """The insights page's values, rounded for people."""

    def minutes(seconds: float | None) -> str:
        return "—" if seconds is None else f"{seconds / 60:.1f} min"

    def share(rate: float | None) -> str:
        return "—" if rate is None else f"{rate:.0%}"

    return {
        "decided": found.decided,
        "covered": covered(found),
        "default_rate": share(found.default_rate),
        "clarification_rate": share(found.clarification_rate),
        "by_tier": [(k, s.count, minutes(s.p50), minutes(s.p90)) for k, s in found.by_tier.items()],
        "by_channel": [
            (k, s.count, minutes(s.p50), minutes(s.p90)) for k, s in found.by_channel.items()
        ],
        "repeats": [(run, trigger, n) for (run, trigger), n in found.repeats.items()],
        "same_answer": [(t, option, share(s)) for t, (option, s) in found.same_answer.items()],
    }
