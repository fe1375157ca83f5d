"""`/healthz`: the design in force, once the database answers."""

from __future__ import annotations

from fastapi import APIRouter
from sqlalchemy import text

from api.deps import DbDep, RuntimeDep
from api.schemas import Health

router = APIRouter()


@router.get("/healthz")
def healthz(db: DbDep, runtime: RuntimeDep) -> Health:
    db.execute(text("SELECT 1"))
    return Health(status="ok", design=runtime.design.name, design_version=runtime.design.version)
