"""wake queue: a wake task goes to the run's own queue

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-01 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision = '0031'
down_revision = '0030'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Rows from before hold NULL: their wake task goes to Celery's default queue, `celery`
    # (it used to go to the service's own queue, where it was discarded as unregistered).
    with op.batch_alter_table('deliveries', schema=None) as batch_op:
        batch_op.add_column(sa.Column('queue', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('deliveries', schema=None) as batch_op:
        batch_op.drop_column('queue')
