"""platform refs: where a native chat send landed, so the message can be updated later

Revision ID: 0050
Revises: 0032
Create Date: 2026-12-01 12:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0050'
down_revision = '0032'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Rows from before hold NULL: sent through apprise, nothing to update in place.
    with op.batch_alter_table('deliveries', schema=None) as batch_op:
        batch_op.add_column(sa.Column('platform_refs', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('deliveries', schema=None) as batch_op:
        batch_op.drop_column('platform_refs')
