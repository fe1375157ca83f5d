"""The workflow end to end (SPEC §3) with a real worker, beat, broker, database and channel."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.agent_venv import AgentWorker
from tests.workers.conftest import Harness
from workers.answers import answer
from workers.runtime import runtime_for
from workers.wakeups import SIGNATURE_HEADER, TIMESTAMP_HEADER, verify
from workflows.examples import valid_packet


def packet(packet_id: str, **changes: Any) -> dict[str, Any]:
    return {**valid_packet(), "packet_id": packet_id, **changes}


def test_intake_by_name_notifies_decides_wakes_and_closes(
    service: Harness, agent: AgentWorker
) -> None:
    # Given an agent that raises by task name and asks to be woken by task and webhook
    service.send(
        packet("esc-e2e-1"),
        options=[{"label": "skip", "description": "drop the 3 orphans"}, "placeholder"],
        wake={**agent.wake_spec, "webhook": f"{service.sink.url}/wake"},
    )
    case = service.case("run-8842", "esc-e2e-1")
    # When the notification reaches the tier's primary (and a marked copy)
    service.sink.wait_for(lambda got: any(r.path == "/ops" for r in got))
    primary = service.sink.posts("/ops")[0].body
    lines = primary["message"].splitlines()
    assert lines[0].startswith("Decision needed in run-8842, blocked since ")
    assert "- skip — drop the 3 orphans" in lines and "- placeholder" in lines
    service.sink.wait_for(lambda got: any(r.path == "/ops-log" for r in got))
    assert service.sink.posts("/ops-log")[0].body["title"].startswith("[copy]")
    service.in_state(case.id, "awaiting")
    # And the operator answers
    result = answer(
        runtime_for(service.app), case.id, text="skip them", responder="ana", channel="test"
    )
    assert result.decided and result.option == "skip"
    # Then the case closes with the decision and the run is woken both ways
    closed = service.in_state(case.id, "closed")
    assert closed.outcome == "decided"
    service.sink.wait_for(lambda got: any(r.path == "/wake" for r in got))
    webhook = service.sink.posts("/wake")[0]
    secret = runtime_for(service.app).webhook_secret
    assert verify(
        secret, webhook.headers[TIMESTAMP_HEADER], webhook.raw, webhook.headers[SIGNATURE_HEADER]
    )
    assert webhook.body["option"] == "skip" and webhook.body["decided_by"] == "ana"
    [woken] = agent.wait_for_wakes(1)  # on the agent's own worker, not ours
    assert (woken["escalation_id"], woken["option"]) == (case.id, "skip")
    kinds = [e.kind for e in service.events(case.id)]
    assert kinds[:4] == ["accepted", "snapshot_recorded", "validated", "routed"]
    assert kinds[-1] == "closed" or "closed" in kinds
    assert [d.option for d in service.decisions(case.id)] == ["skip"]


@pytest.mark.impatient
def test_no_answer_gets_one_follow_up_then_the_default_once(service: Harness) -> None:
    # Given a high case nobody answers (window 1s, timeout 2s, next tier: critical's pager)
    service.send(
        packet(
            "esc-e2e-2",
            severity="high",
            waiting_behavior="paused",
            evidence=[{"kind": "log", "ref": "a"}, {"kind": "test", "ref": "b"}],
        )
    )
    case = service.case("run-8842", "esc-e2e-2")
    # When the window and then the timeout pass
    closed = service.in_state(case.id, "closed", timeout=30)
    # Then exactly one follow-up went to the primary and one to the next tier, citing the packet
    follow_ups = [r for r in service.sink.posts("/oncall") if "follow-up" in r.body["title"]]
    assert len(follow_ups) == 1
    assert "esc-e2e-2" in follow_ups[0].body["message"]
    pages = [r for r in service.sink.posts("/pager") if "Defaulted" not in r.body["title"]]
    assert len(pages) == 1  # besides it, at most the resolution notice
    # And the default was applied once, recorded as the system's, not a human's
    assert len(service.events(case.id, "followed_up")) == 1
    assert len(service.events(case.id, "timeout_default")) == 1
    [decision] = service.decisions(case.id)
    assert decision.is_default and decision.option == "retry"
    assert decision.decided_by.startswith("system")
    assert closed.outcome == "defaulted"


def test_a_failing_channel_is_retried_and_each_attempt_recorded(service: Harness) -> None:
    # Given the primary channel answers 500 twice (one attempt of 2 tries), then 200
    service.sink.script("/ops", (500, 0), (500, 0), (200, 0))
    service.send(packet("esc-e2e-3"))
    case = service.case("run-8842", "esc-e2e-3")
    # When the sweeper retries the failed delivery on its interval
    service.wait(
        lambda _s: [
            d
            for d in service.deliveries(case.id)
            if d.target.startswith("json://") and "/ops?" in d.target and d.state == "sent"
        ],
        what="ops delivery sent",
    )
    # Then both attempts are in the audit log: failed, then sent
    attempts = [
        e.detail
        for e in service.events(case.id, "delivery_attempt")
        if "/ops?" in e.detail["channel"] and e.detail["purpose"] == "notify"
    ]
    assert [a["outcome"] for a in attempts] == ["failed", "sent"]
    assert attempts[0]["tries"] == 2 and "error" in attempts[0]
    first_notices = [r for r in service.sink.posts("/ops") if "follow-up" not in r.body["title"]]
    assert len(first_notices) == 3  # 500, 500, then 200


def test_a_dead_channel_escalates_its_own_failure_and_writes_the_fallback(
    service: Harness, tmp_path: Any
) -> None:
    # Given the primary channel always fails
    service.sink.script("/ops", *[(500, 0)] * 20)
    fallback = tmp_path / "BLOCKED.md"
    service.send(packet("esc-e2e-4"), wake={"fallback_file": str(fallback)})
    case = service.case("run-8842", "esc-e2e-4")
    # When the delivery gives up after its attempts
    second = service.case("run-8842", "esc-e2e-4-undelivered")
    # Then a second packet, citing the first, went to the next tier (high → oncall)
    assert second.cites_id == case.id and second.severity == "high"
    service.sink.wait_for(lambda got: any(r.path == "/oncall" for r in got))
    assert case.packet_id in service.sink.posts("/oncall")[0].body["message"]
    # And the run's fallback file holds the four sections
    text = fallback.read_text()
    assert [line for line in text.splitlines() if line.startswith("#")] == [
        "# Blocked",
        "## Question:",
        "## Context:",
        "## Attempted:",
        "## Choices:",
    ]
    gave_up = [
        e.detail
        for e in service.events(case.id, "delivery_attempt")
        if e.detail.get("gave_up") and e.detail["purpose"] == "notify"
    ]
    assert len(gave_up) == 1 and gave_up[0]["attempt"] == service.settings.delivery_max_attempts


def test_a_refused_packet_sends_nothing_and_stores_no_secret(service: Harness) -> None:
    # Given a packet carrying a credential
    secret = "postgres://admin:Zq8" + "vT2pLm9xWc@db.internal/prod"
    service.send(packet("esc-e2e-5", trigger_detail=f"connect failed: {secret}"))
    case = service.case("run-8842", "esc-e2e-5")
    # Then it is refused with the field and kind named, and nothing was sent
    assert case.state == "refused"
    assert any("trigger_detail: contains a secret" in p for p in case.problems)
    assert service.deliveries(case.id) == []
    stored = json.dumps(
        [case.model_dump(mode="json"), [e.model_dump(mode="json") for e in service.events(case.id)]]
    )
    assert "Zq8vT2pLm9xWc" not in stored


def test_the_same_packet_twice_is_one_case(service: Harness) -> None:
    service.send(packet("esc-e2e-6"))
    service.send(packet("esc-e2e-6"))
    case = service.case("run-8842", "esc-e2e-6")
    service.in_state(case.id, "awaiting")
    service.sink.wait_for(lambda got: any(r.path == "/ops" for r in got))
    assert len(service.events(case.id, "accepted")) == 1
