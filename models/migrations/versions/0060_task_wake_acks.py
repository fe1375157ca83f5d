"""task wake acknowledgements: a task's wake is acknowledged and redelivered like a case's

Revision ID: 0060
Revises: 0050
Create Date: 2026-12-01 11:45:00
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision = '0060'
down_revision = '0050'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('task_waits') as batch:
        batch.add_column(sa.Column('resumed_at', sa.DateTime(timezone=True), nullable=True))
        batch.add_column(
            sa.Column('resumed_via', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=True)
        )
        batch.add_column(sa.Column('ack_due_at', sa.DateTime(timezone=True), nullable=True))
        batch.add_column(
            sa.Column('wake_redeliveries', sa.Integer(), nullable=False, server_default='0')
        )
        batch.create_index('ix_task_waits_ack_due_at', ['ack_due_at'], unique=False)
    with op.batch_alter_table('escalations') as batch:
        batch.add_column(sa.Column('task_wait_id', sa.Integer(), nullable=True))
    # Sets woken before acknowledgements existed are not flagged as never resumed.
    op.execute(
        "UPDATE task_waits SET resumed_at = woken_at, resumed_via = 'before_acks' "
        "WHERE woken_at IS NOT NULL"
    )


def downgrade() -> None:
    with op.batch_alter_table('escalations') as batch:
        batch.drop_column('task_wait_id')
    with op.batch_alter_table('task_waits') as batch:
        batch.drop_index('ix_task_waits_ack_due_at')
        batch.drop_column('wake_redeliveries')
        batch.drop_column('ack_due_at')
        batch.drop_column('resumed_via')
        batch.drop_column('resumed_at')
