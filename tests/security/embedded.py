"""The embedded service without a worker: an app on SQLite under tmp_path, with two tokens.

Test modules import `settings` and `client` from here to use them in place of the live
worker harness the package's conftest provides."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from models.settings import Settings

REPO = Path(__file__).resolve().parents[2]
AGENT = {"Authorization": "Bearer agent-t"}
OPERATOR = {"Authorization": "Bearer op-t"}


def embedded_settings(tmp_path: Path, **changes: Any) -> Settings:
    """SQLite and the folder broker under tmp_path, the fast design, the two tokens."""
    return Settings(
        home=tmp_path / "home",
        design=REPO / "examples" / "design-fast.yaml",
        **{"api_tokens": "agent:agent-t,operator:op-t", **changes},
    )


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return embedded_settings(tmp_path)


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as started:
        yield started
