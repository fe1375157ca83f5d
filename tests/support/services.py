"""The real Redis and PostgreSQL of this machine: skip locally when absent, fail in CI."""

from __future__ import annotations

import importlib
import os
import secrets
import shutil
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import NoReturn

import pytest

REDIS = ("127.0.0.1", 6379)
REDIS_URL = f"redis://{REDIS[0]}:{REDIS[1]}/0"
POSTGRES = ("127.0.0.1", 5432)
POSTGRES_ADMIN_URL = os.environ.get(
    "ESCALATE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test"
)


def reachable(address: tuple[str, int]) -> bool:
    try:
        with socket.create_connection(address, timeout=1):
            return True
    except OSError:
        return False


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def missing(message: str, *, module: bool = False) -> NoReturn:
    """In CI a missing service or program is a failure, never a skip (`module`: called
    while a test module is imported)."""
    if in_ci():
        pytest.fail(message, pytrace=False)
    pytest.skip(message, allow_module_level=module)


def import_or_missing(name: str, why: str) -> ModuleType:
    """A module only some installs have (dev extras): a skip locally, a failure in CI."""
    try:
        return importlib.import_module(name)
    except ImportError:
        missing(f"{name} is not installed: {why}", module=True)


def require(address: tuple[str, int], name: str) -> None:
    if not reachable(address):
        missing(f"{name} is not running on {address[0]}:{address[1]} (scripts/ensure-services.sh)")


def require_program(name: str, why: str) -> None:
    """A program a test starts itself (its own Redis, openssl)."""
    if shutil.which(name) is None:
        missing(f"{name} is not installed: {why}")


@contextmanager
def fresh_postgres_database() -> Iterator[str]:
    """A new, empty database for one test; dropped afterwards. Yields its SQLAlchemy URL."""
    import psycopg

    require(POSTGRES, "PostgreSQL")
    name = f"escalate_test_{secrets.token_hex(4)}"
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    base = POSTGRES_ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://")
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
