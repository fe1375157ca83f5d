"""cites index: the cases citing one, asked at every close, found without a scan

Revision ID: 0085
Revises: 0080
Create Date: 2026-12-02 12:00:00
"""

from __future__ import annotations

from alembic import op


revision = '0085'
down_revision = '0080'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Every close asks which open cases cite it (workers/undelivered.settle_citing): without
    # this index that read every open case in the states it names.
    op.create_index('ix_escalations_cites_id', 'escalations', ['cites_id'])


def downgrade() -> None:
    op.drop_index('ix_escalations_cites_id', table_name='escalations')
