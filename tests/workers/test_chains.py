"""Chains, acknowledgements and working hours end to end: a real worker and beat, HTTP sinks."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from models.settings import Settings
from models.tables import Delivery
from tests.support.sink import Received
from tests.workers.conftest import Harness
from workers.acknowledgements import acknowledge, acknowledge_from_chat
from workers.answers import answer
from workers.runtime import runtime_for
from workflows.examples import valid_packet

OPERATOR = {"Authorization": "Bearer op-token"}
CHAINS = Path(__file__).resolve().parent.parent / "support" / "design-chains.yaml"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"design": CHAINS})


def packet(packet_id: str, **changes: Any) -> dict[str, Any]:
    return {**valid_packet(), "packet_id": packet_id, **changes}


def high(packet_id: str) -> dict[str, Any]:
    evidence = [{"kind": "log", "ref": "a"}, {"kind": "test", "ref": "b"}]
    return packet(packet_id, severity="high", waiting_behavior="paused", evidence=evidence)


def chain_posts(service: Harness, path: str, case_id: str) -> list[Received]:
    return [
        r
        for r in service.sink.posts(path)
        if "ESCALATED" in r.body["message"] and case_id in r.body["message"]
    ]


def settled_chain(service: Harness, case_id: str) -> list[Delivery] | None:
    """The case's chain pages, once none is being sent."""
    chain = [d for d in service.deliveries(case_id) if d.purpose == "chain"]
    return None if any(d.state == "sending" for d in chain) else chain


def design_with(tmp_path: Path, name: str, edit: Callable[[dict[str, Any]], None]) -> Path:
    """A copy of the chains design, its severities changed by `edit`."""
    data = yaml.safe_load(CHAINS.read_text())
    edit(data["severities"])
    path = tmp_path / f"design-{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_chain_pages_each_level_in_turn_and_a_decision_stops_the_rest(service: Harness) -> None:
    # Given a medium case: notice to ops, then oncall 2s later, pager 2s after that, twice
    service.send(packet("esc-chain-1"))
    case = service.case("run-8842", "esc-chain-1")
    # When the chain's first level has been paged
    service.sink.wait_for(lambda _: len(chain_posts(service, "/oncall", case.id)) >= 1)
    assert (
        "level 1 of 2, round 1 of 2" in chain_posts(service, "/oncall", case.id)[0].body["message"]
    )
    # And the operator decides
    result = answer(runtime_for(service.app), case.id, text="deny", responder="ana", channel="t")
    assert result.decided
    service.in_state(case.id, "closed")
    # (a level claimed just before the decision is still being sent: its record comes after)
    chain = service.wait(
        lambda _s: settled_chain(service, case.id), what="no chain page still being sent"
    )
    # Then each level was due 2s after the one before, none went out before its time,
    # and the pages still waiting when the case was decided were cancelled, never sent
    assert [(d.step, d.payload["level"], d.payload["round"]) for d in chain] == [
        (1, 1, 1), (2, 2, 1), (3, 1, 2), (4, 2, 2)
    ]  # fmt: skip
    for delivery in chain:
        assert delivery.next_attempt_at is not None and delivery.created_at is not None
        due = delivery.next_attempt_at.replace(tzinfo=UTC)
        offset = (delivery.next_attempt_at - delivery.created_at).total_seconds()
        assert offset == pytest.approx(2 * delivery.step, abs=0.01)
        if delivery.state == "sent":
            assert delivery.sent_at is not None and delivery.sent_at.replace(tzinfo=UTC) >= due
        else:
            # not yet due, or due but not yet claimed when the decision came: never sent
            assert delivery.state == "cancelled"
    assert chain[-1].state == "cancelled"
    assert len(service.events(case.id, "pages_stopped")) == 1
    sent = sum(d.state == "sent" for d in chain)
    pages = [r for p in ("/oncall", "/pager") for r in chain_posts(service, p, case.id)]
    assert len(pages) == sent


class TestAnAcknowledgement:
    @pytest.fixture
    def settings(self, settings: Settings, tmp_path: Path) -> Settings:
        """The second level 8 s after the first, one round, and the default at 15 s: at
        full suite load an acknowledgement sent on seeing the first page came more than 2 s
        later, after the second level was due. It is still due before the default."""

        def slow_second_level(severities: dict[str, Any]) -> None:
            medium = severities["medium"]
            medium["chain"]["levels"][1]["after"] = "8s"
            medium["chain"]["repeat"] = 0
            medium["timeout"] = "15s"

        path = design_with(tmp_path, "slow-second-level", slow_second_level)
        return settings.model_copy(update={"design": path})

    def test_stops_a_chain_that_stops_on_ack_but_the_default_still_applies(
        self, service: Harness
    ) -> None:
        # Given a medium case whose chain paged its first level
        service.send(packet("esc-chain-2"))
        case = service.case("run-8842", "esc-chain-2")
        service.sink.wait_for(lambda _: len(chain_posts(service, "/oncall", case.id)) >= 1)
        # When the on-call person acknowledges it
        acknowledge(runtime_for(service.app), case.id, by="dashboard:ana", reason="on it")
        # Then no further level is paged, and the timeout default still decides at the deadline
        closed = service.in_state(case.id, "closed", timeout=30)
        assert closed.outcome == "defaulted" and closed.acknowledged_by == "dashboard:ana"
        assert chain_posts(service, "/pager", case.id) == []
        assert len(chain_posts(service, "/oncall", case.id)) == 1
        [stopped] = service.events(case.id, "pages_stopped")
        assert stopped.detail["why"] == "acknowledged" and stopped.detail["purposes"] == ["chain"]


class TestAHold:
    @pytest.fixture
    def settings(self, settings: Settings, tmp_path: Path) -> Settings:
        """High's window 6 s and its hold at 9 s: at full suite load the acknowledgement
        sent on seeing the notice came after a 1 s window had passed (never awaiting)."""

        def slower_high(severities: dict[str, Any]) -> None:
            severities["high"].update(window="6s", timeout="9s")

        path = design_with(tmp_path, "slow-high", slower_high)
        return settings.model_copy(update={"design": path})

    @pytest.mark.parametrize("via", ["dashboard", "chat"])
    def test_an_ack_stops_the_reminder_and_the_next_tier_and_a_hold_pages_nobody(
        self, service: Harness, api: TestClient, via: str
    ) -> None:
        # Given a high case (hold, next tier critical) whose notice reached oncall
        service.send(high("esc-ack-1"))
        case = service.case("run-8842", "esc-ack-1")
        service.sink.wait_for(
            lambda _: any(case.id in r.body["message"] for r in service.sink.posts())
        )
        service.in_state(case.id, "awaiting")
        # When oncall acknowledges it before the window passes
        runtime = runtime_for(service.app)
        if via == "dashboard":
            acknowledge(runtime, case.id, by="slack:U1", reason="looking now")
        else:  # "on it" on the chat, as the buttons and chat paths record it
            told = acknowledge_from_chat(
                runtime,
                case.id,
                text="on it, looking now",
                by="slack:U1",
                channel="slack",
                message_id="m-1",
                verified=True,
            )
            assert told is not None and told.outcome == "acknowledged"
        # Then the window and the timeout pass with no reminder, no next tier, and no decision
        held = service.wait(
            lambda _s: service.events(case.id, "held") or None, timeout=20, what="held"
        )[0]
        assert held.detail == {"after_seconds": 9.0, "paged": [], "acknowledged_by": "slack:U1"}
        [followed] = service.events(case.id, "followed_up")
        assert (
            followed.detail["recipients"] == [] and followed.detail["acknowledged_by"] == "slack:U1"
        )
        assert [r for r in service.sink.posts("/pager") if case.id in r.body["message"]] == []
        assert [r for r in service.sink.posts("/oncall") if "FOLLOW-UP" in r.body["message"]] == []
        assert service.decisions(case.id) == []
        assert service.in_state(case.id, "followed_up").next_action_at is None
        # And the case says who is on it
        shown = api.get(f"/v1/escalations/{case.id}", headers=OPERATOR).json()
        assert shown["acknowledged_by"] == "slack:U1" and shown["acknowledged_at"]


def hours_from_now(tmp_path: Path, seconds: float) -> Path:
    """The chains design with low's working hours opening `seconds` from now (UTC)."""
    opens = datetime.now(UTC) + timedelta(seconds=seconds)

    def hours(severities: dict[str, Any]) -> None:
        severities["low"]["hours"] = {
            "timezone": "UTC",
            "days": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"],
            "start": opens.strftime("%H:%M:%S"),
            "end": (opens + timedelta(hours=1)).strftime("%H:%M:%S"),
        }

    return design_with(tmp_path, "hours", hours)


class TestWorkingHours:
    @pytest.fixture
    def settings(self, settings: Settings, tmp_path: Path) -> Settings:
        # twelve seconds: at full suite load a worker took over five to start and route
        return settings.model_copy(update={"design": hours_from_now(tmp_path, 12)})

    def test_a_low_page_waits_for_the_hours_and_a_critical_one_pierces_them(
        self, service: Harness
    ) -> None:
        # Given low's hours open twelve seconds from now
        raised = datetime.now(UTC)
        service.send(packet("esc-hours-low", severity="low", waiting_behavior="safe_subset"))
        service.send(
            packet(
                "esc-hours-critical",
                severity="critical",
                waiting_behavior="stopped",
                evidence=[{"kind": "log", "ref": "a"}, {"kind": "test", "ref": "b"}],
            )
        )
        low = service.case("run-8842", "esc-hours-low")
        # When both are routed
        service.sink.wait_for(lambda got: any(r.path.startswith("/pager") for r in got))
        [routed] = service.wait(lambda _s: service.events(low.id, "routed") or None)
        # Then the low page was written to wait for the hours (the critical one was not)
        assert "held_for_hours_until" in routed.detail
        opens = datetime.fromisoformat(routed.detail["held_for_hours_until"])
        critical = service.case("run-8842", "esc-hours-critical")
        assert "held_for_hours_until" not in service.events(critical.id, "routed")[0].detail
        page = service.wait(
            lambda _s: next((d for d in service.deliveries(low.id) if d.sent_at), None),
            what="the low page sent",
        )
        assert page.sent_at is not None and page.sent_at.replace(tzinfo=UTC) >= opens > raised
        # And its window counts from the opening, so the follow-up comes a window after it
        case = service.in_state(low.id, "followed_up", "decided", "closed", timeout=20)
        assert case.followed_up_at is not None
        assert case.followed_up_at.replace(tzinfo=UTC) >= opens + timedelta(seconds=1)
