"""wake acknowledgements: resumed_at, resumed_via, ack_due_at, wake_redeliveries

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 09:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('escalations') as batch:
        batch.add_column(sa.Column('resumed_at', sa.DateTime(timezone=True), nullable=True))
        batch.add_column(
            sa.Column('resumed_via', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=True)
        )
        batch.add_column(sa.Column('ack_due_at', sa.DateTime(timezone=True), nullable=True))
        batch.add_column(
            sa.Column('wake_redeliveries', sa.Integer(), nullable=False, server_default='0')
        )
        batch.create_index('ix_escalations_ack_due_at', ['ack_due_at'], unique=False)
    # Cases closed before acknowledgements existed are not flagged as never resumed.
    op.execute(
        "UPDATE escalations SET resumed_at = closed_at, resumed_via = 'before_acks' "
        "WHERE closed_at IS NOT NULL"
    )


def downgrade() -> None:
    with op.batch_alter_table('escalations') as batch:
        batch.drop_index('ix_escalations_ack_due_at')
        batch.drop_column('wake_redeliveries')
        batch.drop_column('ack_due_at')
        batch.drop_column('resumed_via')
        batch.drop_column('resumed_at')
