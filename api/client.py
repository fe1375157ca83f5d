"""A small Python client for the HTTP API (`pip install agent-escalation` brings it)."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Collection
from typing import Any, ParamSpec, TypeVar

import httpx

from api.run_outcome import TERMINAL_STATES, outcome_of
from workflows.errors import EscalationError, PermanentError

P = ParamSpec("P")
R = TypeVar("R")


class ClientError(EscalationError):
    """The server refused or could not be reached; `status` is the HTTP status (0 if none)."""

    def __init__(self, status: int, detail: Any) -> None:
        self.status = status
        self.detail = detail
        super().__init__(f"HTTP {status}: {detail}" if status else str(detail))


class Escalations:
    """Raise, read, answer and wait for escalations over HTTP."""

    def __init__(self, url: str, token: str, *, timeout: float = 10.0) -> None:
        self._http = httpx.Client(
            base_url=url.rstrip("/"), timeout=timeout, headers={"Authorization": f"Bearer {token}"}
        )

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ClientError(0, f"cannot reach {self._http.base_url}: {exc}") from None
        return _body_of(response)

    def raise_(self, packet: dict[str, Any], **parts: Any) -> dict[str, Any]:
        """File an escalation: `packet` plus optional snapshot, options and wake."""
        request = {"packet": packet, **{k: v for k, v in parts.items() if v is not None}}
        result: dict[str, Any] = self._call("POST", "/v1/escalations", json=request)
        return result

    def get(self, escalation_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", f"/v1/escalations/{escalation_id}")
        return result

    def stats(self) -> dict[str, Any]:
        """Cases by state, the oldest open one, parked cases, deliveries by state."""
        result: dict[str, Any] = self._call("GET", "/v1/stats")
        return result

    def retry(self, escalation_id: str) -> dict[str, Any]:
        """Send a dead_letter case back to the stage it failed in (operator token)."""
        result: dict[str, Any] = self._call("POST", f"/v1/escalations/{escalation_id}/retry")
        return result

    def raise_pipeline(self, state_dir: str, **options: Any) -> dict[str, Any]:
        """File a pipeline's escalation from its state folder on the service's disk (SPEC §6)."""
        body = {"state_dir": state_dir, **{k: v for k, v in options.items() if v is not None}}
        result: dict[str, Any] = self._call("POST", "/v1/pipelines/escalations", json=body)
        return result

    def pipeline_counters(self, pipeline_id: str, phase: str) -> dict[str, Any]:
        """Resets the service has counted for one phase, and what it would offer now."""
        params = {"pipeline_id": pipeline_id, "phase": phase}
        result: dict[str, Any] = self._call("GET", "/v1/pipelines/counters", params=params)
        return result

    def list(self, **filters: Any) -> list[dict[str, Any]]:
        params = {k: v for k, v in filters.items() if v is not None}
        result: list[dict[str, Any]] = self._call("GET", "/v1/escalations", params=params)
        return result

    def events(self, escalation_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", f"/v1/escalations/{escalation_id}/events")
        return result

    def reply(
        self,
        escalation_id: str,
        *,
        text: str | None = None,
        option: str | None = None,
        sender: str | None = None,
    ) -> dict[str, Any]:
        """Answer; a superseded reply (someone decided first) comes back, not raised."""
        body = {k: v for k, v in (("text", text), ("option", option), ("sender", sender)) if v}
        try:
            result: dict[str, Any] = self._call(
                "POST", f"/v1/escalations/{escalation_id}/replies", json=body
            )
        except ClientError as exc:
            if exc.status == 409 and isinstance(exc.detail, dict) and "outcome" in exc.detail:
                return exc.detail
            raise
        return result

    def wait(
        self,
        escalation_id: str,
        *,
        timeout: float | None = None,
        hold: float = 25.0,
        ack: bool = True,
    ) -> dict[str, Any] | None:
        """Block until the case is closed (or refused/parked); None when `timeout` passes first.

        Uses the server's bounded long-poll, so an interrupted wait can simply be called again.
        Returning a decision acknowledges its wake (the run took it), unless `ack` is False.
        """
        waiting = _Waiting(timeout, hold)
        while True:
            method, path, options = waiting.request(escalation_id)
            case: dict[str, Any] = self._call(method, path, **options)
            if waiting.over(case):
                if case["state"] not in TERMINAL_STATES:
                    return None
                if ack and case["state"] == "closed":
                    self.ack(escalation_id)
                return case

    def ack(self, wake_id: str) -> dict[str, Any]:
        """Say the run took its decision and resumed; repeats change nothing."""
        result: dict[str, Any] = self._call("POST", f"/v1/wakes/{wake_id}/ack")
        return result

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Escalations:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _body_of(response: httpx.Response) -> Any:
    """The decoded body; an HTTP error status becomes a ClientError carrying it."""
    body = response.json() if response.content else None
    if response.status_code >= 400:
        raise ClientError(response.status_code, body)
    return body


class _Waiting:
    """One wait's long-poll requests, each held at most `hold` and never past `timeout`."""

    def __init__(self, timeout: float | None, hold: float) -> None:
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.hold = hold

    def request(self, escalation_id: str) -> tuple[str, str, dict[str, Any]]:
        left = self.hold
        if self.deadline is not None:
            left = min(self.hold, max(0.0, self.deadline - time.monotonic()))
        path = f"/v1/escalations/{escalation_id}/wait"
        return "GET", path, {"params": {"hold": left}, "timeout": left + 10}

    def over(self, case: dict[str, Any]) -> bool:
        """The case reached an end, or the caller's timeout passed."""
        timed_out = self.deadline is not None and time.monotonic() >= self.deadline
        return case["state"] in TERMINAL_STATES or timed_out


class ApprovalDenied(PermanentError):
    """`require_approval` did not run the function; the subclass says why, `.case` shows it."""

    def __init__(self, case: dict[str, Any] | None, why: str) -> None:
        self.case = case
        super().__init__(f"not approved: {why} (case {(case or {}).get('id')})")


class Denied(ApprovalDenied):
    """A person decided, on an option that does not approve."""


class Defaulted(ApprovalDenied):
    """Nobody decided in time; `.action` is the default the design applied."""

    def __init__(self, case: dict[str, Any] | None) -> None:
        self.action = ((case or {}).get("decision") or {}).get("value")
        super().__init__(case, f"nobody decided in time; the default {self.action!r} applied")


class WorldChanged(ApprovalDenied):
    """Approved, but the state the run stopped in changed while it waited: reconcile first."""


class NoAnswer(ApprovalDenied):
    """Still undecided when the wait's timeout ran out; wait again with the case id."""


class NotDecided(ApprovalDenied):
    """The case ended without a decision (refused, parked or cancelled)."""


def check_approved(case: dict[str, Any] | None, approving: Collection[str]) -> None:
    """Return only when a person chose one of the `approving` options (label or value)."""
    outcome = outcome_of(case)
    decision = (case or {}).get("decision") or {}
    chose = {str(decision.get("option", "")).lower(), str(decision.get("value", "")).lower()}
    marked = {name.lower() for name in approving}
    if outcome == "pending":
        raise NoAnswer(case, "no decision in time")
    if outcome == "defaulted":
        raise Defaulted(case)
    if outcome not in ("decided", "reconcile_first"):
        raise NotDecided(case, f"the case ended {outcome} without a decision")
    if not chose & marked or decision.get("is_default"):
        raise Denied(case, f"{decision.get('decided_by')} chose {decision.get('option')!r}")
    if outcome == "reconcile_first":
        raise WorldChanged(case, "the state changed while the run waited; reconcile first")


def require_approval(
    client: Escalations,
    packet: dict[str, Any] | Callable[..., dict[str, Any]],
    *,
    options: list[Any] | None = None,
    timeout: float | None = None,
    approving: Collection[str] = ("approve",),
    snapshot: dict[str, Any] | None = None,
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Escalate before the function runs; run it only when a person chose an `approving`
    option (by label or value) and the world did not change while it waited.

    `packet` may be a callable given the function's arguments, so the packet can name them.
    Raises Denied, Defaulted (a default never approves), WorldChanged, NoAnswer or
    NotDecided, all ApprovalDenied.
    """

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(function)
        def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
            body = packet(*args, **kwargs) if callable(packet) else packet
            created = client.raise_(body, options=options, snapshot=snapshot)
            case = client.wait(created["id"], timeout=timeout)
            check_approved(case, approving)
            return function(*args, **kwargs)

        return guarded

    return decorate


class AsyncEscalations:
    """The same client for asyncio code: raise_, get and wait are coroutines."""

    def __init__(self, url: str, token: str, *, timeout: float = 10.0) -> None:
        self._http = httpx.AsyncClient(
            base_url=url.rstrip("/"),
            timeout=timeout,
            headers={"Authorization": f"Bearer {token}"},
        )

    async def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = await self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ClientError(0, f"cannot reach {self._http.base_url}: {exc}") from None
        return _body_of(response)

    async def raise_(self, packet: dict[str, Any], **parts: Any) -> dict[str, Any]:
        request = {"packet": packet, **{k: v for k, v in parts.items() if v is not None}}
        result: dict[str, Any] = await self._call("POST", "/v1/escalations", json=request)
        return result

    async def get(self, escalation_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self._call("GET", f"/v1/escalations/{escalation_id}")
        return result

    async def raise_pipeline(self, state_dir: str, **options: Any) -> dict[str, Any]:
        body = {"state_dir": state_dir, **{k: v for k, v in options.items() if v is not None}}
        result: dict[str, Any] = await self._call("POST", "/v1/pipelines/escalations", json=body)
        return result

    async def wait(
        self,
        escalation_id: str,
        *,
        timeout: float | None = None,
        hold: float = 25.0,
        ack: bool = True,
    ) -> dict[str, Any] | None:
        """As Escalations.wait, without blocking the event loop."""
        waiting = _Waiting(timeout, hold)
        while True:
            method, path, options = waiting.request(escalation_id)
            case: dict[str, Any] = await self._call(method, path, **options)
            if waiting.over(case):
                if case["state"] not in TERMINAL_STATES:
                    return None
                if ack and case["state"] == "closed":
                    await self._call("POST", f"/v1/wakes/{escalation_id}/ack")
                return case

    async def aclose(self) -> None:
        await self._http.aclose()
