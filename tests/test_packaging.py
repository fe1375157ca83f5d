"""The generic top-level package names must resolve to this repo, not to site-packages."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", ["models", "workflows", "workers", "api"])
def test_package_imports_from_this_repo(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__file__ is not None
    assert Path(module.__file__).resolve().parent == REPO / name


def test_the_wheel_carries_the_migrations(tmp_path: Path) -> None:
    # Given a plain (non-editable) build, as a container or `pip install agent-escalation` gets;
    # built from a copy so setuptools' build/ folder never lands in (or stales) the checkout
    import shutil
    import subprocess
    import sys
    import zipfile

    source = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in ("models", "workflows", "workers", "api"):
        shutil.copytree(REPO / name, source / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "dist"),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    [wheel] = (tmp_path / "dist").glob("agent_escalation-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    # Then `escalate migrate` has what Alembic needs
    assert "models/migrations/env.py" in names
    assert "models/migrations/script.py.mako" in names
    assert any(n.startswith("models/migrations/versions/0001_") for n in names)
    # And the answer pages and the dashboard have their templates and script
    for page in (REPO / "api" / "templates").glob("*.html"):
        assert f"api/templates/{page.name}" in names
    assert "api/static/console.js" in names
