"""A small Python client for the HTTP API (`pip install agent-escalation` brings it)."""

from __future__ import annotations

import time
from typing import Any

import httpx

TERMINAL_STATES = {"closed", "refused", "dead_letter"}


class ClientError(Exception):
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
        body = response.json() if response.content else None
        if response.status_code >= 400:
            raise ClientError(response.status_code, body)
        return body

    def raise_(self, packet: dict[str, Any], **parts: Any) -> dict[str, Any]:
        """File an escalation: `packet` plus optional snapshot, options and wake."""
        request = {"packet": packet, **{k: v for k, v in parts.items() if v is not None}}
        result: dict[str, Any] = self._call("POST", "/v1/escalations", json=request)
        return result

    def get(self, escalation_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", f"/v1/escalations/{escalation_id}")
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
        self, escalation_id: str, *, timeout: float | None = None, poll: float = 1.0
    ) -> dict[str, Any] | None:
        """Block until the case is closed (or refused/dead); None when `timeout` passes first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            case = self.get(escalation_id)
            if case["state"] in TERMINAL_STATES:
                return case
            if deadline is not None and time.monotonic() >= deadline:
                return None
            time.sleep(
                poll if deadline is None else max(0.0, min(poll, deadline - time.monotonic()))
            )

    def close(self) -> None:
        self._http.close()
