"""A run's task and its one set of blockers, woken once when the last is resolved (SPEC §8)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response, status

from api.deps import CurrentAgent, CurrentRole, RuntimeDep
from api.schemas import BlockersCreate, TaskBlockers, TaskWaits
from workers import blockers
from workflows.limits import ID_LIMIT

router = APIRouter()

Task = Annotated[str, Path(max_length=ID_LIMIT)]


@router.post(
    "/v1/tasks/{task}/blockers",
    status_code=status.HTTP_201_CREATED,
    responses={200: {"model": TaskBlockers, "description": "no blocker was new"}},
)
def link_blockers(
    task: Task, body: BlockersCreate, runtime: RuntimeDep, response: Response, _role: CurrentAgent
) -> TaskBlockers:
    """Add these escalations to the task's one open set of blockers: it is woken once, when
    the last is resolved. 201 when a blocker was added, 200 when none was new."""
    linked = TaskBlockers.model_validate(blockers.link(runtime, task, body.escalations, body.wake))
    if not linked.added:
        response.status_code = status.HTTP_200_OK
    return linked


@router.get("/v1/tasks/{task}/blockers")
def task_blockers(task: Task, runtime: RuntimeDep, _role: CurrentRole) -> TaskWaits:
    """The task's 'Decision needed' cards and whether it was woken."""
    return TaskWaits.model_validate(blockers.cards(runtime, task))
