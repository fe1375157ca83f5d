"""The floor for the end-to-end figure: a plain six-task Celery chain, no logic.

Shaped like a case: tasks 0-3 run on their own (intake, snapshot, route, deliver: task 3
posts once to the HTTP sink); the driver then answers in-process (`answer`, one write
transaction) and sends tasks 4-5 (close, deliver the wake). Each of the seven transactions
writes its share of the rows a real case writes. Run by bench/e2e.py as
`celery -A bench.floor_app worker` with BENCH_FLOOR_* in the environment.

BENCH_FLOOR_POSTS (1 by default, the floor of issue #16) posts that many times a case
instead, the first half at task 3 and the rest at task 5, as a case pages and then sends its
resolution notices: a floor that notifies as often as the service does.
"""

from __future__ import annotations

import os
import urllib.request
from typing import Any

from celery import Celery
from sqlalchemy import JSON, Column, Integer, MetaData, String, Table, create_engine, update
from sqlalchemy.engine import Engine

STEPS = 6
ANSWER = 4  # the driver's answer comes before this task; it is the seventh transaction
metadata = MetaData()
cases = Table(
    "floor_cases",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("step", Integer, nullable=False),
    Column("detail", JSON),
)
rows = Table(
    "floor_rows",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("case_id", String(32), index=True),
    Column("step", Integer),
    Column("detail", JSON),
)

app = Celery("floor", broker=os.environ.get("BENCH_FLOOR_BROKER", "memory://"))
app.conf.update(
    task_serializer="json",
    accept_content=["json"],
    task_ignore_result=True,
    task_acks_late=True,
    worker_prefetch_multiplier=1,
    task_default_queue=os.environ.get("BENCH_FLOOR_QUEUE", "floor"),
    worker_hijack_root_logger=False,
)
_engine: dict[int, Engine] = {}


def engine() -> Engine:
    pid = os.getpid()  # one engine per pool process, never shared across a fork
    if pid not in _engine:
        _engine[pid] = create_engine(os.environ["BENCH_FLOOR_DATABASE"], pool_pre_ping=True)
    return _engine[pid]


def writes_of(step: int) -> int:
    """This transaction's share of a real case's row writes (BENCH_FLOOR_WRITES per case);
    transaction STEPS is the driver's answer."""
    total, transactions = int(os.environ.get("BENCH_FLOOR_WRITES", "12")), STEPS + 1
    return max(1, total // transactions + (1 if step < total % transactions else 0))


def write(case_id: str, index: int) -> None:
    """Update the case row, insert the rest of this transaction's writes."""
    detail: dict[str, Any] = {"step": index, "note": "x" * 200}
    with engine().begin() as connection:
        if index == 0:
            connection.execute(cases.insert().values(id=case_id, step=0, detail=detail))
        else:
            connection.execute(
                update(cases).where(cases.c.id == case_id).values(step=index, detail=detail)
            )
        extra = writes_of(index) - 1
        if extra > 0:
            connection.execute(
                rows.insert(), [{"case_id": case_id, "step": index, "detail": detail}] * extra
            )


def posts_at(index: int) -> int:
    """How many times task `index` posts: BENCH_FLOOR_POSTS a case, split over tasks 3 and 5."""
    total = int(os.environ.get("BENCH_FLOOR_POSTS", "1"))
    return {3: total - total // 2, 5: total // 2}.get(index, 0)


def answer(case_id: str) -> None:
    """The driver's in-process answer, then the nudge to close."""
    write(case_id, STEPS)
    app.send_task("floor.step", args=[case_id, ANSWER])


# Not shared: the bench reloads this module, and a shared task would be registered again on
# every app the process makes later (a DuplicateTaskNameWarning in each test after it).
@app.task(name="floor.step", shared=False)
def step(case_id: str, index: int) -> None:
    """One link of the chain; it stops before ANSWER until the driver answers."""
    write(case_id, index)
    for _ in range(posts_at(index)):
        body = b'{"title": "floor", "body": "one notification"}'
        request = urllib.request.Request(
            os.environ["BENCH_FLOOR_SINK"], data=body, headers={"Content-Type": "application/json"}
        )
        urllib.request.urlopen(request, timeout=10).read()
    if index + 1 < STEPS and index + 1 != ANSWER:
        app.send_task("floor.step", args=[case_id, index + 1])
