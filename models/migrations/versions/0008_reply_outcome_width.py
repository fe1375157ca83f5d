"""reply outcome width: needs_confirmation is 18 characters

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('replies') as batch:
        batch.alter_column(
            'outcome', existing_type=sa.String(length=16), type_=sa.String(length=24),
            existing_nullable=False,
        )


def downgrade() -> None:
    with op.batch_alter_table('replies') as batch:
        batch.alter_column(
            'outcome', existing_type=sa.String(length=24), type_=sa.String(length=16),
            existing_nullable=False,
        )
