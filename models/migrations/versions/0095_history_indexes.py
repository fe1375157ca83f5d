"""history indexes: newest, latest ended, not resumed, latest decisions

Revision ID: 0095
Revises: 0090
Create Date: 2026-12-02 21:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0095'
down_revision = '0090'
branch_labels = None
depends_on = None

# Written out, not imported: a migration stays what it was when the models change.
NOT_RESUMED = (
    "state = 'closed' AND resumed_at IS NULL AND ack_due_at IS NULL AND task_wait_id IS NULL"
)


def upgrade() -> None:
    # Each read a whole table, sorted, at 100,000 closed cases (docs/PERFORMANCE.md): the
    # API's newest cases, the console's latest closed and refused, /v1/stats' and /metrics'
    # cases whose run never acknowledged its wake, the insights' latest decisions.
    op.create_index('ix_escalations_created_at', 'escalations', ['created_at'])
    op.create_index('ix_escalations_ended', 'escalations', ['state', 'closed_at'])
    op.create_index(
        'ix_escalations_not_resumed',
        'escalations',
        ['closed_at'],
        sqlite_where=sa.text(NOT_RESUMED),
        postgresql_where=sa.text(NOT_RESUMED),
    )
    op.create_index('ix_decisions_at', 'decisions', ['at'])


def downgrade() -> None:
    op.drop_index('ix_decisions_at', table_name='decisions')
    op.drop_index('ix_escalations_not_resumed', table_name='escalations')
    op.drop_index('ix_escalations_ended', table_name='escalations')
    op.drop_index('ix_escalations_created_at', table_name='escalations')
