"""held deliveries index: the pages a channel holds, found without reading the outbox

Revision ID: 0090
Revises: 0085
Create Date: 2026-12-02 20:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0090'
down_revision = '0085'
branch_labels = None
depends_on = None

# Written out, not imported: a migration stays what it was when the models change.
HELD_ROWS = "state IN ('abandoned', 'unknown')"


def upgrade() -> None:
    # Every page that worked asks whether its channel holds pages to send again
    # (workers/undelivered.py): without this index PostgreSQL read every outbox row for it.
    op.create_index(
        'ix_deliveries_held',
        'deliveries',
        ['target'],
        sqlite_where=sa.text(HELD_ROWS),
        postgresql_where=sa.text(HELD_ROWS),
    )


def downgrade() -> None:
    op.drop_index('ix_deliveries_held', table_name='deliveries')
