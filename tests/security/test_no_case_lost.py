"""No accepted case is lost to its own content (issue #14, item 5).

Intake refuses what cannot be stored, sent or woken (a NUL, a lone surrogate, a value longer
than its column) with a 422 naming the field, in the pure intake rules that HTTP, send_task
and pipelines share; a reply that cannot be stored is refused the same way. Generated
requests and replies, on SQLite and on PostgreSQL: every one is a 201 or a 422, never a 5xx;
every accepted case closes; every read of it (GET, wait, events, its dashboard page)
answers without a 5xx.
"""

from __future__ import annotations

import json
import secrets
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.workers.conftest import Harness
from workflows.examples import valid_packet
from workflows.intake import admit
from workflows.limits import DETAIL_LIMIT, unstorable

AGENT = {"Authorization": "Bearer agent-token", "Content-Type": "application/json"}
OPERATOR = {"Authorization": "Bearer op-token", "Content-Type": "application/json"}

# Every code point, NUL and lone surrogates included (hypothesis leaves surrogates out unless
# told), weighted towards the characters that broke cases before.
anything = st.characters(codec=None, exclude_categories=())
nasty = st.sampled_from(["\x00", "\ud800", "\udfff", "\ufeff", "é", "\u202e", "𝕏", "\n"])
texts = st.text(alphabet=st.one_of(anything, nasty), max_size=12)
# Lengths around the columns: ids 200, webhook 500, one-sentence fields 1,000.
lengths = st.sampled_from([0, 1, 150, 199, 200, 201, 300, 499, 501, 600])


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    """A raise request: the worked packet with generated text where runs write their own."""
    packet = valid_packet()
    unique = secrets.token_hex(4)
    packet["run_id"] = f"run-{unique}" + draw(texts) + "r" * draw(lengths)
    packet["packet_id"] = f"p-{unique}" + draw(texts)
    for key in ("task_summary", "blocked_on", "requested_action"):
        packet[key] = draw(st.sampled_from([packet[key], packet[key] + draw(texts)]))
    packet["attempted"] = [*packet["attempted"], *draw(st.lists(texts, max_size=2))]
    request: dict[str, Any] = {"packet": packet}
    if draw(st.booleans()):
        labels = draw(st.lists(texts.filter(str.strip), min_size=2, max_size=3, unique=True))
        request["options"] = labels
    if draw(st.booleans()):
        request["snapshot"] = {
            "verified": draw(texts),
            "proof": draw(texts),
            "scheduled_task_ids": draw(st.lists(texts.filter(bool), max_size=2)),
            "fingerprint": {"kind": "none"},
        }
    if draw(st.booleans()):
        request["owner"] = "slack:" + draw(texts) + "u" * draw(lengths)
    wake = draw(st.sampled_from(["none", "task", "webhook"]))
    if wake == "task":
        request["wake"] = {"task": "test.woken" + draw(texts) + "t" * draw(lengths)}
    elif wake == "webhook":
        # a lone surrogate goes as the bytes it would be, percent-encoded: invalid UTF-8
        path = quote(draw(texts), safe="", errors="surrogatepass") + "w" * draw(lengths)
        request["wake"] = {"webhook": f"__SINK__/wake/{path}"}
    return request


def post_json(client: TestClient, url: str, body: object, headers: dict[str, str]) -> Any:
    # ASCII JSON: a lone surrogate travels as \\ud800, as a real client's JSON would carry it.
    return client.post(url, content=json.dumps(body), headers=headers)


def reads(api: TestClient, escalation_id: str, cookie: str) -> dict[str, int]:
    """Every way a stored case is read, and the status each answered."""
    return {
        "get": api.get(f"/v1/escalations/{escalation_id}", headers=OPERATOR).status_code,
        "wait": api.get(
            f"/v1/escalations/{escalation_id}/wait", params={"hold": 0}, headers=OPERATOR
        ).status_code,
        "events": api.get(f"/v1/escalations/{escalation_id}/events", headers=OPERATOR).status_code,
        "list": api.get("/v1/escalations", headers=OPERATOR).status_code,
        "page": api.get(
            f"/dashboard/cases/{escalation_id}", headers={"Cookie": f"escalate_dashboard={cookie}"}
        ).status_code,
    }


@settings(max_examples=300, deadline=None)
@given(request=requests(), extra=st.dictionaries(texts, texts, max_size=2))
def test_admitted_requests_hold_only_storable_text(
    request: dict[str, Any], extra: dict[str, str]
) -> None:
    # Given any generated request (a stray snapshot key too); When the pure rules admit it
    request.setdefault("snapshot", {}).update(extra)
    admission = admit(request)
    # Then an admitted one holds no string that a column, UTF-8 or a channel refuses
    if admission.accepted:
        stack: list[object] = [request]
        while stack:
            value = stack.pop()
            if isinstance(value, str):
                assert unstorable(value) is None and len(value) <= DETAIL_LIMIT
            elif isinstance(value, dict):
                stack += [*value.keys(), *value.values()]
            elif isinstance(value, list):
                stack += value
    else:  # and a refused one names the field of every problem
        assert all(":" in line for line in admission.problems), admission.problems


@pytest.mark.timeout(240)
@pytest.mark.impatient  # a generated reply may decide nothing: the default closes it
@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(request=requests(), reply=texts)
def test_every_accepted_case_closes_and_every_read_of_it_answers(
    service: Harness, api: TestClient, request: dict[str, Any], reply: str
) -> None:
    wake = request.get("wake", {})
    if "webhook" in wake:
        wake["webhook"] = wake["webhook"].replace("__SINK__", service.sink.url)
    # Given a generated request; When an agent raises it over HTTP
    raised = post_json(api, "/v1/escalations", request, AGENT)
    # Then it is accepted or refused by name, never a 5xx
    assert raised.status_code in (201, 422), raised.text
    if raised.status_code == 422:
        assert raised.json()["errors"], raised.text
        return
    escalation_id = raised.json()["id"]
    # When an operator replies with generated text, then answers by an option
    answered = post_json(
        api, f"/v1/escalations/{escalation_id}/replies", {"text": reply or "?"}, OPERATOR
    )
    assert answered.status_code < 500, answered.text
    # Then the case closes (by the answer or the timeout default) and is never parked
    row = service.in_state(escalation_id, "closed", "dead_letter", "refused", timeout=30)
    assert row.state == "closed", (row.state, row.problems)
    # And every read of it answers
    signed = api.post("/dashboard/login", data={"token": "op-token"}, follow_redirects=False)
    cookie = signed.cookies.get("escalate_dashboard") or api.cookies.get("escalate_dashboard")
    assert cookie
    statuses = reads(api, escalation_id, cookie)
    assert all(code == 200 for code in statuses.values()), statuses


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("task_summary", "lone \ud800 surrogate"),
        ("blocked_on", "a NUL \x00 byte"),
        ("run_id", "r" * 201),
    ],
)
def test_intake_names_the_field_it_cannot_store(field: str, value: str) -> None:
    # Given the worked packet with one value no column can hold; When admitted
    packet = {**valid_packet(), field: value}
    admission = admit({"packet": packet})
    # Then it is refused, and the line names the field
    assert not admission.accepted
    assert any(line.startswith(f"packet.{field}:") for line in admission.problems)


@pytest.mark.parametrize(
    ("wake", "field"),
    [
        ({"task": "t" * 600}, "wake.task"),
        ({"webhook": "https://example.com/" + "w" * 600}, "wake.webhook"),
        ({"task": "wake\x00me"}, "wake.task"),
    ],
)
def test_a_wake_that_could_not_be_sent_is_refused_at_intake(
    wake: dict[str, str], field: str
) -> None:
    admission = admit({"packet": valid_packet(), "wake": wake})
    assert not admission.accepted
    assert any(line.startswith(f"{field}:") for line in admission.problems), admission.problems


@pytest.mark.parametrize("backend", ["redis-postgres"], indirect=True)
def test_a_reply_that_cannot_be_stored_is_refused_not_lost(
    service: Harness, api: TestClient
) -> None:
    # Given an open case on PostgreSQL
    raised = post_json(api, "/v1/escalations", {"packet": valid_packet()}, AGENT)
    assert raised.status_code == 201, raised.text
    escalation_id = raised.json()["id"]
    service.in_state(escalation_id, "awaiting", "notified", timeout=20)
    # When replies arrive holding a NUL or a lone surrogate
    for body in ({"text": "approve\x00"}, {"option": "approve\ud800"}, {"text": "ok \udc00"}):
        refused = post_json(api, f"/v1/escalations/{escalation_id}/replies", body, OPERATOR)
        # Then each is a 422 naming the field, never a 500
        assert refused.status_code == 422, refused.text
    # And a clean reply still decides
    decided = post_json(
        api, f"/v1/escalations/{escalation_id}/replies", {"option": "approve"}, OPERATOR
    )
    assert decided.status_code == 200, decided.text
