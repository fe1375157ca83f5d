"""Bring the database to the newest schema with Alembic (run at start and in tests)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

from models.settings import Settings
from models.state_files import private_folder

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def alembic_config(settings: Settings) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", settings.resolved_database_url)
    return config


def upgrade(settings: Settings) -> None:
    """Apply every migration not yet applied; safe to run on every start."""
    private_folder(settings.home)
    command.upgrade(alembic_config(settings), "head")
