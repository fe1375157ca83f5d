"""Each benchmark runs at a tiny size and prints its figures (no timing is asserted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import check_cli, dashboard, e2e, floor_app, intake_http, rss, sweep, wake
from tests.support.reference_checker import reference_script
from tests.support.services import POSTGRES, REDIS, require


def test_the_sweep_benchmark_runs_on_both_databases(capsys: pytest.CaptureFixture[str]) -> None:
    # Given PostgreSQL is up
    require(POSTGRES, "PostgreSQL")
    # When the sweep benchmark runs at two tiny sizes
    sweep.report([600, 1_200], ["sqlite", "postgres"], 3)
    # Then it printed both figures, a verdict and the plans, for both databases
    out = capsys.readouterr().out
    assert out.count("one sweep pass's reads") == 2
    assert "1,200 / 600" in out and "due cases, stalled:" in out


def test_the_sweep_benchmark_reuses_the_sqlite_files_it_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a run that kept its SQLite databases, the larger grown from the smaller
    sweep.report([600, 1_200], ["sqlite"], 3, keep=tmp_path)
    first = capsys.readouterr().out
    kept = tmp_path / "sqlite-1200" / "sqlite" / "escalate.sqlite"
    written = kept.stat().st_mtime_ns
    # When it runs again on them with another connection setting
    sweep.report([600, 1_200], ["sqlite"], 3, keep=tmp_path, pragmas=("cache_size=-4096",))
    # Then the first run loaded both and the second loaded nothing, found the same due
    # cases (its checks passed), and timed the cold first pass too
    again = capsys.readouterr().out
    assert first.count("(loaded in") == 2 and again.count("(kept)") == 2
    assert "(loaded in" not in again and "first pass, cold file" in again
    assert kept.stat().st_mode & 0o777 == 0o600 and kept.stat().st_mtime_ns == written


def test_the_end_to_end_benchmark_runs_beside_its_floor(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given Redis and PostgreSQL are up
    require(REDIS, "Redis")
    require(POSTGRES, "PostgreSQL")
    # When the end-to-end benchmark runs three rounds of three cases over a stored history,
    # its floor posting four times a case
    # (the counters' full wait makes the floor's row count exact, not this check: 22 s saved)
    monkeypatch.setattr(e2e, "STATS_WAIT", 1.0)
    e2e.report(cases=3, runs=3, history=20, floor_posts=4)
    # Then the service's rate, the floor's and their ratio are printed
    out = capsys.readouterr().out
    assert "service:" in out and "floor:" in out and "ratio:" in out and "n=3" in out
    assert "20 closed cases stored before" in out
    # and how often each posted: the example design pages a primary and a copy, then tells
    # both the outcome
    assert "the service posted 4 times to its channels (the floor: 4)" in out
    # and where each side's CPU went, its pool processes under celery
    assert "CPU a case, ms" in out
    for side in ("service", "floor"):
        [line] = [line for line in out.splitlines() if f"{side}: " in line and "machine" in line]
        assert "celery " in line and "postgres " in line and "driver " in line


@pytest.mark.parametrize(
    ("posts", "by_task"), [(None, {3: 1}), ("4", {3: 2, 5: 2}), ("3", {3: 2, 5: 1})]
)
def test_the_floor_posts_its_share_at_paging_and_at_closing(
    monkeypatch: pytest.MonkeyPatch, posts: str | None, by_task: dict[int, int]
) -> None:
    if posts is None:
        monkeypatch.delenv("BENCH_FLOOR_POSTS", raising=False)
    else:
        monkeypatch.setenv("BENCH_FLOOR_POSTS", posts)
    made = {index: floor_app.posts_at(index) for index in range(floor_app.STEPS)}
    assert {index: n for index, n in made.items() if n} == by_task


def test_the_dashboard_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    # When the dashboard benchmark runs with a few open cases
    dashboard.report(5)
    # Then the page's time and size are printed against their targets
    out = capsys.readouterr().out
    assert "dashboard with 5 open cases" in out and "KiB of HTML" in out


@pytest.fixture
def redis_and_postgres() -> None:
    """The machine's Redis and PostgreSQL, which the benchmark below runs on."""
    require(REDIS, "Redis")
    require(POSTGRES, "PostgreSQL")


@pytest.mark.usefixtures("redis_and_postgres")
def test_the_memory_benchmark_reports_each_mark_over_fresh_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # When the memory benchmark runs twice, each a fresh worker reading its memory at two marks
    rss.report([3, 6], batch=3, runs=2)
    # Then each mark and the growth are medians over both runs, against the target
    out = capsys.readouterr().out
    assert "after      3 cases:" in out and "after      6 cases:" in out
    assert out.count("n=2") == 3
    assert "6 / 3:" in out and "target ≤ 1.1" in out


@pytest.mark.usefixtures("redis_and_postgres")
def test_the_wake_benchmark_runs_on_both_backends(capsys: pytest.CaptureFixture[str]) -> None:
    # When the reply → wake benchmark answers two cases a round on each backend
    wake.report(cases=2, runs=3, backends=["embedded", "redis-postgres"])
    # Then both backends' p50 and p99 are printed, the embedded one against its target
    out = capsys.readouterr().out
    assert "reply → wake webhook, embedded" in out and "reply → wake webhook, redis-postgres" in out
    assert [line.split()[0] for line in out.splitlines() if "p99 " in line] == ["p50", "p50"]
    assert "p50 met (target ≤ 0.1)" in out or "p50 NOT met (target ≤ 0.1)" in out


@pytest.mark.usefixtures("redis_and_postgres")
def test_the_intake_benchmark_runs_beside_its_bare_endpoint(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # When the HTTP intake benchmark sends a few requests at two levels
    intake_http.report([1, 2], requests=5, runs=3)
    # Then each level's p99 ratio to the bare endpoint is printed against its target
    out = capsys.readouterr().out
    assert "1 clients:" in out and "2 clients:" in out
    assert out.count("p99 ratio") == 2 and "target ≤ 3" in out


def test_the_check_benchmark_runs_beside_the_reference_checker(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Given the founding document holding the reference checker
    reference_script(tmp_path)
    # When `escalate check` and the seed's reference checker alternate twice each (a run
    # that exits non-zero stops the benchmark)
    check_cli.report(2)
    # Then both inputs' wall and CPU ratios are printed against the target
    out = capsys.readouterr().out
    assert out.count("ratio") == 4 and out.count("(target <= 2.5x)") == 4
