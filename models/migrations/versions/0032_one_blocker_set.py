"""one blocker set: a task has at most one open set of blockers, extended as they come

Revision ID: 0032
Revises: 0031
Create Date: 2026-12-01 11:00:00
"""

from __future__ import annotations

import hashlib

import sqlalchemy as sa
from alembic import op


revision = '0032'
down_revision = '0031'
branch_labels = None
depends_on = None

waits = sa.table(
    'task_waits',
    sa.column('id', sa.Integer()),
    sa.column('task', sa.String()),
    sa.column('set_key', sa.String()),
    sa.column('escalation_ids', sa.JSON()),
    sa.column('woken_at', sa.DateTime(timezone=True)),
)


def _key(ids: list[str]) -> str:  # workflows/blockers.blocker_set_key, as of this revision
    return hashlib.sha256("\x1f".join(sorted(set(ids))).encode()).hexdigest()


def upgrade() -> None:
    # Open sets of one task, made one at a time as blockers were added, become one set: the
    # oldest, holding every blocker in the order added (its wake is kept).
    bind = op.get_bind()
    rows = bind.execute(
        sa.select(waits.c.id, waits.c.task, waits.c.escalation_ids)
        .where(waits.c.woken_at.is_(None))
        .order_by(waits.c.task, waits.c.id)
    ).all()
    by_task: dict[str, list[tuple[int, list[str]]]] = {}
    for wait_id, task, ids in rows:
        by_task.setdefault(task, []).append((wait_id, list(ids or [])))
    for sets in by_task.values():
        if len(sets) < 2:
            continue
        merged = list(dict.fromkeys(i for _, ids in sets for i in ids))
        keep = sets[0][0]
        bind.execute(
            waits.update()
            .where(waits.c.id == keep)
            .values(escalation_ids=merged, set_key=_key(merged))
        )
        bind.execute(waits.delete().where(waits.c.id.in_([wait_id for wait_id, _ in sets[1:]])))
    with op.batch_alter_table('task_waits', schema=None) as batch_op:
        batch_op.drop_constraint('uq_task_wait_set', type_='unique')
        batch_op.create_index(
            'uq_task_waits_one_open',
            ['task'],
            unique=True,
            sqlite_where=sa.text('woken_at IS NULL'),
            postgresql_where=sa.text('woken_at IS NULL'),
        )


def downgrade() -> None:
    with op.batch_alter_table('task_waits', schema=None) as batch_op:
        batch_op.drop_index('uq_task_waits_one_open')
        batch_op.create_unique_constraint('uq_task_wait_set', ['task', 'set_key'])
