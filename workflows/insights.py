"""How decisions go, as pure figures: time to decision, defaults, clarifications, repeats."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

SAME_ANSWER_SHARE = 0.8  # a trigger answered this alike is a `never_escalate` candidate
SAME_ANSWER_MIN = 5  # ... once it has at least this many decided cases


@dataclass(frozen=True)
class Decided:
    """One decided case as the insights read it."""

    severity: str
    trigger: str
    run_id: str
    channel: str
    option: str
    is_default: bool
    routed_at: datetime | None
    decided_at: datetime | None


@dataclass(frozen=True)
class Spread:
    """Time to decision in seconds over `count` human decisions."""

    count: int
    p50: float | None
    p90: float | None


@dataclass(frozen=True)
class Insights:
    """The figures the insights page and /metrics show."""

    decided: int
    default_rate: float | None
    clarification_rate: float | None
    by_tier: dict[str, Spread]
    by_channel: dict[str, Spread]
    repeats: dict[tuple[str, str], int]  # (run, trigger) → cases beyond the first
    same_answer: dict[str, tuple[str, float]]  # trigger → (option, share)
    since: datetime | None = None  # the oldest decision read: the figures cover from here on


def percentile(values: Sequence[float], share: float) -> float | None:
    """Nearest-rank percentile (0 < share ≤ 1); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def _spread(seconds: list[float]) -> Spread:
    return Spread(len(seconds), percentile(seconds, 0.5), percentile(seconds, 0.9))


def insights(cases: Iterable[Decided], *, replies: int = 0, undecided_replies: int = 0) -> Insights:
    """The figures over decided cases; defaults count in the rate, not in the times."""
    cases = list(cases)
    tiers: dict[str, list[float]] = defaultdict(list)
    channels: dict[str, list[float]] = defaultdict(list)
    per_run: Counter[tuple[str, str]] = Counter()
    answers: dict[str, Counter[str]] = defaultdict(Counter)
    for case in cases:
        per_run[(case.run_id, case.trigger)] += 1
        answers[case.trigger][case.option] += 1
        if case.is_default or case.routed_at is None or case.decided_at is None:
            continue
        took = max(0.0, (case.decided_at - case.routed_at).total_seconds())
        tiers[case.severity].append(took)
        channels[case.channel].append(took)
    same = {}
    for trigger, counted in answers.items():
        total = sum(counted.values())
        option, most = counted.most_common(1)[0]
        if total >= SAME_ANSWER_MIN and most / total >= SAME_ANSWER_SHARE:
            same[trigger] = (option, most / total)
    defaults = sum(1 for case in cases if case.is_default)
    moments = [case.decided_at for case in cases if case.decided_at is not None]
    return Insights(
        decided=len(cases),
        default_rate=defaults / len(cases) if cases else None,
        clarification_rate=undecided_replies / replies if replies else None,
        by_tier={tier: _spread(v) for tier, v in sorted(tiers.items())},
        by_channel={channel: _spread(v) for channel, v in sorted(channels.items())},
        repeats={key: n - 1 for key, n in sorted(per_run.items()) if n > 1},
        same_answer=same,
        since=min(moments, default=None),
    )
