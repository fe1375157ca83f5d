"""How decisions go: percentiles, default and clarification rates, repeats, same answers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from workflows.insights import Decided, insights, percentile

T0 = datetime(2026, 12, 1, 7, 0, tzinfo=UTC)


def decided(
    minutes: float, *, severity: str = "high", channel: str = "slack", option: str = "skip",
    trigger: str = "blocked", run: str = "run-1", default: bool = False,
) -> Decided:  # fmt: skip
    return Decided(
        severity, trigger, run, channel, option, default, T0, T0 + timedelta(minutes=minutes)
    )


def test_percentiles_are_nearest_rank() -> None:
    assert percentile([], 0.5) is None
    assert percentile([5.0], 0.9) == 5.0
    values = [float(v) for v in range(1, 11)]
    assert (percentile(values, 0.5), percentile(values, 0.9)) == (5.0, 9.0)


def test_time_to_decision_per_tier_and_channel_leaves_defaults_out() -> None:
    cases = [decided(m) for m in (1, 2, 3, 4, 10)] + [
        decided(60, severity="low", channel="email"),
        decided(240, severity="low", default=True, option="abort", run="run-2"),
    ]
    found = insights(cases, replies=10, undecided_replies=3)
    assert found.decided == 7
    assert found.by_tier["high"].p50 == 180 and found.by_tier["high"].p90 == 600
    assert found.by_tier["low"].count == 1  # the default is not a person's decision
    assert set(found.by_channel) == {"slack", "email"}
    assert found.default_rate == 1 / 7
    assert found.clarification_rate == 0.3


def test_repeats_and_triggers_answered_alike() -> None:
    cases = [decided(1) for _ in range(5)] + [decided(1, trigger="cost_risk", run="run-9")]
    found = insights(cases)
    assert found.repeats == {("run-1", "blocked"): 4}
    assert found.same_answer == {"blocked": ("skip", 1.0)}  # cost_risk: too few to say
    mixed = insights([decided(1, option=o) for o in "aabbb"])
    assert mixed.same_answer == {}
    assert insights([]).default_rate is None and insights([]).clarification_rate is None
    assert insights([]).since is None and found.since == T0 + timedelta(minutes=1)
