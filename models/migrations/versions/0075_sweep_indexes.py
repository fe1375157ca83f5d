"""sweep indexes: (state, next_action_at) and (state, updated_at), in place of (state)

Revision ID: 0075
Revises: 0060
Create Date: 2026-12-01 12:30:00
"""

from __future__ import annotations

from alembic import op


revision = '0075'
down_revision = '0060'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Each branch of the sweeper's query is then one index range whatever the planner knows
    # (SQLite has no statistics unless ANALYZE runs): it scanned every open case before
    # (bench/sweep.py). The state index is a prefix of both, so it goes.
    op.create_index('ix_escalations_due', 'escalations', ['state', 'next_action_at'])
    op.create_index('ix_escalations_stalled', 'escalations', ['state', 'updated_at'])
    op.drop_index('ix_escalations_state', table_name='escalations')


def downgrade() -> None:
    op.create_index('ix_escalations_state', 'escalations', ['state'])
    op.drop_index('ix_escalations_stalled', table_name='escalations')
    op.drop_index('ix_escalations_due', table_name='escalations')
