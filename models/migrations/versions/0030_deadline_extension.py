"""deadline extension: escalations.extended_seconds, what operators added to the timeout

Revision ID: 0030
Revises: 0011
Create Date: 2026-12-01 10:05:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0030'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('escalations') as batch:
        batch.add_column(
            sa.Column('extended_seconds', sa.Integer(), nullable=False, server_default='0')
        )


def downgrade() -> None:
    with op.batch_alter_table('escalations') as batch:
        batch.drop_column('extended_seconds')
