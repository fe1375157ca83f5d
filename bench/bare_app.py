"""The floor for `POST /v1/escalations`: a bare FastAPI endpoint inserting one row.

Served by bench/intake_http.py as `uvicorn --factory bench.bare_app:make_app`, with the
service's database (BENCH_BARE_DATABASE) and the same engine options as models/db.py.
"""

from __future__ import annotations

import os
import secrets
from typing import Any

from fastapi import Body, FastAPI, status
from sqlalchemy import JSON, Column, MetaData, String, Table, create_engine

metadata = MetaData()
rows = Table(
    "bare_rows", metadata, Column("id", String(12), primary_key=True), Column("body", JSON)
)


def make_app() -> FastAPI:
    url = os.environ["BENCH_BARE_DATABASE"]
    engine = create_engine(url, pool_pre_ping=True)
    metadata.create_all(engine)
    app = FastAPI()

    @app.post("/bare", status_code=status.HTTP_201_CREATED)
    def insert(body: Any = Body()) -> dict[str, str]:
        new = secrets.token_hex(6)
        with engine.begin() as connection:
            connection.execute(rows.insert().values(id=new, body=body))
        return {"id": new}

    return app
