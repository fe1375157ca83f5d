"""Delivery failures end to end: the second case, unknown sends, re-sends once a channel works."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, select

from models.settings import Settings
from models.tables import Escalation
from tests.support.sink import Received
from tests.workers.conftest import Harness
from workers.answering import LinkClaim, case_token, read_link
from workers.answers import answer
from workers.runtime import runtime_for
from workflows.examples import valid_packet

# Medium: ops + a copy to ops-log, 10 s to answer; its failure case is high (oncall, hold).
CHAINS = Path(__file__).resolve().parent.parent / "support" / "design-chains.yaml"
OPTIONS = [{"label": "skip", "description": "drop the 3 orphans"}, "placeholder"]


@pytest.fixture
def send_timeout() -> float:
    """Seconds before a send with no answer is unknown: ample for a 500 on a loaded machine
    (a slow one would read as unknown, not failed); the hang tests set their own."""
    return 5.0


@pytest.fixture
def settings(settings: Settings, send_timeout: float) -> Settings:
    return settings.model_copy(update={"design": CHAINS, "send_timeout": send_timeout})


def packet(packet_id: str) -> dict[str, Any]:
    # Each its own question: the same one asked again would join the open case.
    return {**valid_packet(), "packet_id": packet_id, "blocked_on": f"Blocked on {packet_id}."}


def about(posts: list[Received], case_id: str) -> list[Received]:
    return [r for r in posts if f"Case {case_id} " in r.body["message"]]


def test_a_failure_case_repeats_the_question_names_every_channel_and_follows_the_original(
    service: Harness,
) -> None:
    # Given both of the tier's channels always fail
    service.sink.script("/ops", *[(500, 0)] * 40)
    service.sink.script("/ops-log", *[(500, 0)] * 40)
    service.send(packet("esc-df-1"), options=OPTIONS)
    original = service.case("run-8842", "esc-df-1")
    # When both give up
    second = service.case("run-8842", "esc-df-1-undelivered")
    named = service.wait(
        lambda s: (
            (row := s.get(Escalation, second.id))
            and len((row.packet or {}).get("failing_channels", [])) == 2
            and row.packet["failing_channels"]
        ),
        what="both channels named on the failure case",
    )
    # Then the failure case is one tier up and names each failing channel
    assert second.cites_id == original.id and second.severity == "high"
    assert {"/ops?" in n for n in named} == {True, False}
    assert any("/ops-log?" in n for n in named)

    # And its notice to oncall repeats the original's question, options, code and links
    def oncall_text() -> str:
        return "\n".join(r.body["message"] for r in about(service.sink.posts("/oncall"), second.id))

    # (a channel that joined after the notice went out is named in a notice of its own)
    service.sink.wait_for(lambda _: all(channel in oncall_text() for channel in named))
    runtime = runtime_for(service.app)
    text = oncall_text()
    assert f"The original question (case {original.id}), answer it directly" in text
    assert "skip — drop the 3 orphans" in text and "placeholder" in text
    assert case_token(runtime.answer_key, original.id, None) in text
    prefix = f"{runtime.settings.resolved_public_url}/a/"
    signed = re.findall(re.escape(prefix) + r"([\w.-]+)", text)
    claims = {read_link(runtime.answer_key, link, max_age=3600) for link in signed}
    assert LinkClaim(original.id, "skip", "oncall") in claims
    assert LinkClaim(original.id, "placeholder", "oncall") in claims
    # When the original is answered (its own code, its own rules)
    result = answer(runtime, original.id, text="skip", responder="ana", channel="test")
    assert result.decided
    # Then the failure case is settled by that decision, and the original points to it
    settled = service.in_state(second.id, "closed")
    [decision] = service.decisions(second.id)
    assert decision.decided_by == f"system (case {original.id} decided by ana)"
    assert (decision.option, decision.is_default, settled.outcome) == ("skip", False, "decided")
    [forward] = service.events(original.id, "undelivered_escalated")
    assert forward.detail["case"] == second.id
    with Session(service.engine) as session:
        citing = session.exec(select(Escalation).where(Escalation.cites_id == original.id))
        assert [row.id for row in citing] == [second.id]


# Its page hangs 5 s: unknown. Two seconds, not half of one, for the copy's 500s: at full
# suite load a 500 answered after 0.5 s read as unknown (held), and never gave up.
@pytest.mark.parametrize("send_timeout", [2.0])
def test_an_unknown_send_is_not_resent_until_its_channel_works_then_once_and_marked(
    service: Harness,
) -> None:
    # Given ops reads the request and then stalls past the send timeout, and ops-log fails
    # every try of the copy's three attempts
    service.sink.script("/ops", (200, 5.0))
    service.sink.script("/ops-log", *[(500, 0)] * 6)
    service.send(packet("esc-df-2"), options=OPTIONS)
    first = service.case("run-8842", "esc-df-2")

    def rows(case_id: str) -> dict[str, str]:
        return {
            ("ops-log" if "/ops-log?" in d.target else "ops"): d.state
            for d in service.deliveries(case_id)
            if d.purpose == "notify"
        }

    service.wait(
        lambda _s: rows(first.id) == {"ops": "unknown", "ops-log": "abandoned"} or None,
        what="the notice unknown and the copy given up",
    )
    # Then the unknown notice is not sent again on the retry interval (it did arrive)
    service.sink.wait_for(lambda _: len(about(service.sink.posts("/ops"), first.id)) == 1)
    unknown = [
        e.detail
        for e in service.events(first.id, "delivery_attempt")
        if e.detail["outcome"] == "unknown"
    ]
    assert len(unknown) == 1 and unknown[0]["held_until_channel_works"] is True
    # And a copy's give-up raises no failure case: the decider's page may have arrived
    with Session(service.engine) as session:
        assert session.exec(select(Escalation).where(Escalation.cites_id == first.id)).all() == []
    # When another case's sends on both channels succeed
    service.send(packet("esc-df-3"), options=OPTIONS)
    later = service.case("run-8842", "esc-df-3")
    service.wait(lambda _s: rows(later.id) == {"ops": "sent", "ops-log": "sent"} or None)
    # Then the first case's pages are sent again, once each, saying why
    service.wait(lambda _s: rows(first.id) == {"ops": "sent", "ops-log": "sent"} or None)
    ops = about(service.sink.posts("/ops"), first.id)
    copies = about(service.sink.posts("/ops-log"), first.id)
    assert len(ops) == 2
    assert ops[1].body["message"].startswith("Sent again: an earlier send timed out")
    assert copies[-1].body["message"].startswith("Sent again: this channel failed earlier")
    resent = service.events(first.id, "delivery_resent")
    assert sorted(e.detail["was"] for e in resent) == ["abandoned", "unknown"]


class TestAHangThatOutlastsASuccess:
    """A page still hanging when another page on its channel goes through."""

    @pytest.fixture
    def settings(self, settings: Settings) -> Settings:
        # A hang long enough for a second case to be raised and paged while it lasts (under
        # the channel's own 4 s read timeout, which would make it a failure, not unknown).
        return settings.model_copy(update={"send_timeout": 3.0})

    def test_is_sent_again_at_once_not_held_for_the_next_send(self, service: Harness) -> None:
        # Given ops stalls past the send timeout on the first case's notice
        service.sink.script("/ops", (200, 6.0))
        service.send(packet("esc-df-hang"), options=OPTIONS)
        first = service.case("run-8842", "esc-df-hang")

        def notice(case_id: str) -> str | None:
            rows = [d for d in service.deliveries(case_id) if d.purpose == "notify"]
            return next((d.state for d in rows if "/ops?" in d.target), None)

        service.wait(lambda _s: notice(first.id) == "sending" or None, what="the hanging send")
        # When a second case's notice goes through on ops while the first still hangs
        service.send(packet("esc-df-quick"), options=OPTIONS)
        later = service.case("run-8842", "esc-df-quick")
        service.wait(lambda _s: notice(later.id) == "sent" or None, what="the second notice")
        # Then the first is sent again, marked, as soon as its send times out: the channel
        # worked after it began, so no later page has to come along first
        service.wait(lambda _s: notice(first.id) == "sent" or None, timeout=20)
        [resent] = service.events(first.id, "delivery_resent")
        assert resent.detail["was"] == "unknown"
        service.sink.wait_for(lambda _: len(about(service.sink.posts("/ops"), first.id)) == 2)
        # (the stalled request is recorded when its stall ends: after the one sent again)
        said = [r.body["message"] for r in about(service.sink.posts("/ops"), first.id)]
        assert sum(m.startswith("Sent again: an earlier send timed out") for m in said) == 1
