"""The figures on /metrics (prometheus-client) and the console's insights page, read from SQL."""

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
from sqlalchemy import Engine, func
from sqlmodel import Session, col, select

from models.store import as_utc
from models.tables import Decision, Delivery, Escalation, Reply
from workers.wake_acks import not_resumed_ids
from workflows.insights import Decided, Insights, insights
from workflows.judgement import ReplyOutcome
from workflows.states import TERMINAL

# Seconds: a minute to a week, the span of human waits.
BUCKETS = (1, 5, 15, 60, 300, 900, 1800, 3600, 4 * 3600, 24 * 3600, 7 * 24 * 3600)
STAGES = (  # stage → (from, to) timestamps of the case
    ("route", "created_at", "routed_at"),
    ("decide", "routed_at", "decided_at"),
    ("close", "decided_at", "closed_at"),
)
NOT_DECIDING = (ReplyOutcome.AMBIGUOUS, ReplyOutcome.COMMENT, ReplyOutcome.NEEDS_CONFIRMATION)


def decided_cases(db: Session) -> list[Decided]:
    rows = db.exec(select(Escalation, Decision).join(Decision)).all()
    return [
        Decided(
            severity=row.severity,
            trigger=row.trigger_type,
            run_id=row.run_id,
            channel=decision.channel,
            option=decision.option,
            is_default=decision.is_default,
            routed_at=as_utc(row.routed_at),
            decided_at=as_utc(decision.at),
        )
        for row, decision in rows
    ]


def figures(db: Session) -> Insights:
    """The insights over every decided case, and the share of replies that needed asking."""
    by_outcome = dict(db.exec(select(Reply.outcome, func.count()).group_by(Reply.outcome)).all())
    unclear = sum(n for outcome, n in by_outcome.items() if outcome in NOT_DECIDING)
    return insights(decided_cases(db), replies=sum(by_outcome.values()), undecided_replies=unclear)


def _histogram(
    name: str, doc: str, labels: Sequence[str], series: dict[tuple[str, ...], list[float]]
) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, doc, labels=list(labels))
    for key, values in sorted(series.items()):
        cumulative = [(str(float(b)), sum(1 for v in values if v <= b)) for b in BUCKETS]
        family.add_metric(list(key), [*cumulative, ("+Inf", len(values))], sum(values))
    return family


class SqlCollector:
    """Reads the figures at scrape time: nothing is kept in the process between scrapes."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def collect(self) -> Iterator[Metric]:
        now = datetime.now(UTC)
        terminal = [s.value for s in TERMINAL]
        with Session(self.engine) as db:
            open_cases = GaugeMetricFamily(
                "escalate_open_cases", "Open cases", labels=["state", "severity"]
            )
            grouped = db.exec(
                select(Escalation.state, Escalation.severity, func.count())
                .where(col(Escalation.state).not_in(terminal))
                .group_by(Escalation.state, Escalation.severity)
            ).all()
            for state, severity, count in grouped:
                open_cases.add_metric([str(state), severity], count)
            yield open_cases
            oldest = as_utc(
                db.exec(
                    select(func.min(Escalation.created_at)).where(
                        col(Escalation.state).not_in(terminal)
                    )
                ).one()
            )
            yield GaugeMetricFamily(
                "escalate_oldest_open_age_seconds",
                "Age of the oldest open case (0 when none is open)",
                value=(now - oldest).total_seconds() if oldest else 0.0,
            )
            yield GaugeMetricFamily(
                "escalate_decided_not_resumed",
                "Closed cases whose run never acknowledged its wake",
                value=len(not_resumed_ids(db, limit=100_000)),
            )
            deliveries = GaugeMetricFamily(
                "escalate_deliveries", "Deliveries by outcome", labels=["state"]
            )
            for state, count in db.exec(
                select(Delivery.state, func.count()).group_by(Delivery.state)
            ).all():
                deliveries.add_metric([str(state)], count)
            yield deliveries
            stages: dict[tuple[str, ...], list[float]] = {}
            for row in db.exec(select(Escalation)).all():
                for stage, start, end in STAGES:
                    began, ended = as_utc(getattr(row, start)), as_utc(getattr(row, end))
                    if began and ended:
                        stages.setdefault((stage,), []).append(
                            max(0.0, (ended - began).total_seconds())
                        )
            yield _histogram(
                "escalate_stage_latency_seconds", "Time each stage took", ["stage"], stages
            )
            decided = decided_cases(db)
            times: dict[tuple[str, ...], list[float]] = {}
            defaults: dict[str, list[bool]] = {}
            for case in decided:
                defaults.setdefault(case.severity, []).append(case.is_default)
                if not case.is_default and case.routed_at and case.decided_at:
                    took = max(0.0, (case.decided_at - case.routed_at).total_seconds())
                    times.setdefault((case.severity, case.channel), []).append(took)
            yield _histogram(
                "escalate_time_to_decision_seconds",
                "Routed to a person's decision, per tier and channel",
                ["tier", "channel"],
                times,
            )
            rate = GaugeMetricFamily(
                "escalate_default_applied_ratio",
                "Share of decided cases where the timeout default applied",
                labels=["tier"],
            )
            for tier, flags in sorted(defaults.items()):
                rate.add_metric([tier], sum(flags) / len(flags))
            yield rate


def exposition(engine: Engine) -> bytes:
    """The Prometheus text format of every figure, read now."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SqlCollector(engine))  # type: ignore[arg-type]
    return generate_latest(registry)


def insight_rows(found: Insights) -> dict[str, Any]:
    """The insights page's values, rounded for people."""

    def minutes(seconds: float | None) -> str:
        return "—" if seconds is None else f"{seconds / 60:.1f} min"

    def share(rate: float | None) -> str:
        return "—" if rate is None else f"{rate:.0%}"

    return {
        "decided": found.decided,
        "default_rate": share(found.default_rate),
        "clarification_rate": share(found.clarification_rate),
        "by_tier": [(k, s.count, minutes(s.p50), minutes(s.p90)) for k, s in found.by_tier.items()],
        "by_channel": [
            (k, s.count, minutes(s.p50), minutes(s.p90)) for k, s in found.by_channel.items()
        ],
        "repeats": [(run, trigger, n) for (run, trigger), n in found.repeats.items()],
        "same_answer": [(t, option, share(s)) for t, (option, s) in found.same_answer.items()],
    }
