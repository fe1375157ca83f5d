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
