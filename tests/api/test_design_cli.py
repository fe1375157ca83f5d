"""`escalate design check FILE`: exit 0 with a summary, or exit 1 with one line per problem."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from api.design_cli import design_app

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


@pytest.fixture
def app() -> typer.Typer:
    # Mounted the way api/cli.py mounts it, with a sibling so "design" stays a group.
    root = typer.Typer()
    root.add_typer(design_app, name="design")

    @root.command()
    def version() -> None:
        """A stand-in sibling command."""

    return root


def test_given_the_example_design_when_checked_then_ok_with_a_tier_summary(
    app: typer.Typer,
) -> None:
    # Given / When
    result = CliRunner().invoke(app, ["design", "check", str(EXAMPLES / "design.yaml")])
    # Then
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == (
        f"ok: {EXAMPLES / 'design.yaml'}: design 'example' v3, tiers: "
        "low 4h->skip, medium 1h->queue, high 15m->retry, critical 5m->abort"
    )
    assert (
        "  high: window 15m, timeout 1h -> retry, to oncall (copies: ops), waiting paused, "
        "next tier critical" in lines
    )
    assert "  low: window 4h, timeout 8h -> skip, to ops-low, waiting safe_subset" in lines
    assert any(line.startswith("  content_hash: ") for line in lines)
    assert any("harm_risk (abort on timeout)" in line for line in lines)


def test_given_the_oncall_example_when_checked_then_its_hours_and_chains_are_listed(
    app: typer.Typer,
) -> None:
    result = CliRunner().invoke(app, ["design", "check", str(EXAMPLES / "design-oncall.yaml")])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert (
        "    hours: mon,tue,wed,thu,fri 09:00-18:00 Europe/Berlin "
        "(pages below critical wait for them)" in lines
    )
    assert (
        "    chain: +10m oncall -> +10m oncall-secondary -> +10m eng-manager,oncall-pager, "
        "2 more round(s), stops on decision" in lines
    )


def test_given_a_chain_past_the_timeout_when_checked_then_exit_1_naming_it(
    app: typer.Typer, tmp_path: Path
) -> None:
    text = (EXAMPLES / "design-oncall.yaml").read_text().replace("timeout: 2h", "timeout: 1h")
    text = text.replace("timeout_default: hold ", "timeout_default: retry")
    path = tmp_path / "design.yaml"
    path.write_text(text)
    result = CliRunner().invoke(app, ["design", "check", str(path)])
    assert result.exit_code == 1
    assert (
        "severities.high.chain: the chain's last page is due 1h30m after the first notice, "
        "not before the timeout 1h" in result.output
    )


def test_given_a_broken_design_when_checked_then_each_problem_is_a_line_and_exit_1(
    app: typer.Typer, tmp_path: Path
) -> None:
    # Given a design with a read_only critical tier and a typo'd key
    text = (EXAMPLES / "design-fast.yaml").read_text()
    text = text.replace("waiting_behavior: stopped", "waiting_behavior: read_only")
    text = text.replace("window: 3s, timeout: 6s", "windw: 3s, timeout: 6s")
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    # When
    result = CliRunner().invoke(app, ["design", "check", str(path)])
    # Then
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert f"error: {path}: severities.high: missing required key 'window'" in lines
    assert any(
        line.startswith(f"error: {path}: severities.high.windw: unknown key") for line in lines
    )
    assert (
        f"error: {path}: severities.critical.waiting_behavior: critical must be paused or "
        "stopped, got 'read_only'" in lines
    )
    assert all(line.startswith("error: ") for line in lines)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "cannot read: no such file"),
        ("a: [\n", "line 2, column 1: YAML syntax error"),
        ("- a list\n", "a design must be a mapping"),
    ],
)
def test_given_an_unusable_file_when_checked_then_a_clear_error_and_exit_1(
    app: typer.Typer, tmp_path: Path, content: str | None, expected: str
) -> None:
    # Given a missing, unparsable or non-mapping file
    path = tmp_path / "design.yaml"
    if content is not None:
        path.write_text(content)
    # When
    result = CliRunner().invoke(app, ["design", "check", str(path)])
    # Then
    assert result.exit_code == 1
    assert result.output.startswith(f"error: {path}: {expected}"), result.output


def test_given_the_cli_module_when_imported_then_nothing_heavy_is_loaded() -> None:
    # Given a fresh interpreter / When the module is imported / Then startup stays fast
    heavy = ["celery", "sqlalchemy", "sqlmodel", "apprise", "fastapi"]
    code = f"import sys, api.design_cli; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
