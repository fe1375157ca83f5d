"""kombu's SQLAlchemy transport with a short polling interval, for the embedded SQLite broker."""

from __future__ import annotations

from kombu.transport import sqlalchemy


class Transport(sqlalchemy.Transport):  # type: ignore[misc]
    """Polls five times a second: kombu would pass a `polling_interval` option to the engine."""

    polling_interval = 0.2
