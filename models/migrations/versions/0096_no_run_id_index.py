"""no index of run_id alone: the run-and-packet unique index starts with it

Revision ID: 0096
Revises: 0095
Create Date: 2026-12-03 09:20:00
"""

from __future__ import annotations

from alembic import op


revision = '0096'
down_revision = '0095'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Every UPDATE of a case changes indexed columns, so PostgreSQL writes an entry in each
    # of the case table's indexes (docs/PERFORMANCE.md): one fewer, and a run's cases are
    # still found by index, through uq_escalation_run_packet.
    op.drop_index('ix_escalations_run_id', table_name='escalations')


def downgrade() -> None:
    op.create_index('ix_escalations_run_id', 'escalations', ['run_id'])
