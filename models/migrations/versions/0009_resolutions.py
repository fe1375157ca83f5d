"""resolutions: resume/stop become decided or defaulted (one vocabulary for the run)

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 09:30:00
"""

from __future__ import annotations

from alembic import op


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Whether a person decided or the default applied is in the decision row; whether the
    # run resumes is the decision's `resumes`, so resume and stop carry nothing more.
    op.execute(
        "UPDATE escalations SET outcome = CASE WHEN EXISTS ("
        " SELECT 1 FROM decisions d WHERE d.escalation_id = escalations.id AND d.is_default"
        ") THEN 'defaulted' ELSE 'decided' END WHERE outcome IN ('resume', 'stop')"
    )


def downgrade() -> None:
    op.execute(
        "UPDATE escalations SET outcome = CASE WHEN EXISTS ("
        " SELECT 1 FROM decisions d WHERE d.escalation_id = escalations.id AND NOT d.resumes"
        ") THEN 'stop' ELSE 'resume' END WHERE outcome IN ('decided', 'defaulted')"
    )
