"""acks and chain steps: who is on a case; an outbox row's step, so a chain pages a tag again

Revision ID: 0080
Revises: 0075
Create Date: 2026-12-01 12:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0080'
down_revision = '0075'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('escalations') as batch:
        batch.add_column(sa.Column('acknowledged_by', sa.String(length=200), nullable=True))
        batch.add_column(
            sa.Column('acknowledged_at', sa.DateTime(timezone=True), nullable=True)
        )
    with op.batch_alter_table('deliveries') as batch:
        batch.add_column(sa.Column('step', sa.Integer(), nullable=False, server_default='0'))
        batch.drop_constraint('uq_delivery_target', type_='unique')
        batch.create_unique_constraint(
            'uq_delivery_target', ['escalation_id', 'purpose', 'target', 'step']
        )


def downgrade() -> None:
    with op.batch_alter_table('deliveries') as batch:
        batch.drop_constraint('uq_delivery_target', type_='unique')
        batch.create_unique_constraint(
            'uq_delivery_target', ['escalation_id', 'purpose', 'target']
        )
        batch.drop_column('step')
    with op.batch_alter_table('escalations') as batch:
        batch.drop_column('acknowledged_at')
        batch.drop_column('acknowledged_by')
