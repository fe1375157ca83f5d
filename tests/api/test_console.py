"""The console over HTTP: due first, filters, search, paging, confirm pages, free-text preview."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from html import unescape
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from api.app import create_app
from models.settings import Settings
from models.tables import Decision, Escalation, Reply
from tests.api.conftest import REPO
from tests.api.console_seed import copies, engine_of, raise_case, route
from workflows.states import State

CARD_QUESTION = re.compile(r'<p class="question"><a href="/dashboard/cases/(\w+)">([^<]*)</a>')


@pytest.fixture
def console(api_settings: Settings) -> Iterator[TestClient]:
    """The app with the example design (windows of hours), signed in as operator ana."""
    settings = api_settings.model_copy(update={"design": REPO / "examples" / "design.yaml"})
    with TestClient(create_app(settings)) as client:
        client.post("/dashboard/login", data={"token": "op-t", "name": "ana"})
        yield client


def questions(html: str) -> list[str]:
    return [unescape(text) for _id, text in CARD_QUESTION.findall(html)]


def test_the_queue_puts_what_is_due_first_and_counts_it(console: TestClient) -> None:
    # Given a low case about to time out, two high ones with more and less time left
    low = raise_case(console, severity="low", packet_id="l", requested_action="Low soon?")
    route(console, low, ago=timedelta(hours=3, minutes=59))
    late = raise_case(console, severity="high", packet_id="h1", requested_action="High late?")
    route(console, late)
    soon = raise_case(console, severity="high", packet_id="h2", requested_action="High soon?")
    route(console, soon, ago=timedelta(minutes=20))
    # When the operator opens the queue
    html = console.get("/dashboard").text
    # Then severity comes first, then time left; each card counts down to its default
    assert questions(html) == ["High soon?", "High late?", "Low soon?"]
    assert re.search(r'<div class="due">\w+ in \d+ min</div>', html)
    assert "<title>(3) open — escalations</title>" in html
    assert ">high 2</a>" in html and ">low 1</a>" in html and ">critical 0</a>" in html


def test_filters_and_search_narrow_the_queue(console: TestClient) -> None:
    first = raise_case(console, packet_id="a", requested_action="Rotate the signing key?")
    route(console, first)
    other = raise_case(
        console, packet_id="b", run_id="run-77", trigger_type="blocked", severity="high",
        requested_action="Restart the broker?", recipient="infra",
    )  # fmt: skip
    route(console, other)
    assert questions(console.get("/dashboard?q=SIGNING").text) == ["Rotate the signing key?"]
    assert questions(console.get("/dashboard?q=run-77").text) == ["Restart the broker?"]
    assert questions(console.get("/dashboard?severity=high").text) == ["Restart the broker?"]
    assert questions(console.get("/dashboard?run=run-8842").text) == ["Rotate the signing key?"]
    assert questions(console.get("/dashboard?trigger=blocked").text) == ["Restart the broker?"]
    assert questions(console.get("/dashboard?recipient=infra").text) == ["Restart the broker?"]
    assert questions(console.get("/dashboard?state=closed").text) == []
    assert "No case matches." in console.get("/dashboard?q=nothing-like-it").text


def test_500_open_cases_are_50_a_page_and_each_page_stays_under_100_kib(
    console: TestClient,
) -> None:
    template = raise_case(console, packet_id="t")
    copies(console, template, 499)
    first = console.get("/dashboard")
    assert len(first.content) < 100 * 1024, len(first.content)
    assert len(questions(first.text)) == 50 and "page 1 of 10" in first.text
    last = console.get("/dashboard?page=10")
    assert len(questions(last.text)) == 50 and "page 10 of 10" in last.text
    assert not set(questions(first.text)) & set(questions(last.text))
    assert "<title>(500) open — escalations</title>" in first.text


def test_an_ended_state_lists_the_latest_first_a_page_at_a_time(console: TestClient) -> None:
    # Given 60 closed cases, closed a minute apart, and one open case
    template = raise_case(console, packet_id="t")
    closed = copies(console, template, 60)
    now = datetime.now(UTC)
    with Session(engine_of(console)) as session:
        for minutes, case_id in enumerate(closed):
            row = session.get(Escalation, case_id)
            assert row is not None
            row.state, row.updated_at = State.CLOSED, now - timedelta(minutes=minutes)
            row.closed_at = row.updated_at
            session.add(row)
        session.commit()
    # When the operator lists closed cases, page 1 and page 2
    first, second = (console.get(f"/dashboard?state=closed&page={n}").text for n in (1, 2))
    # Then the most recently closed come first, 50 and then 10, and nothing open is listed
    order = [f"Case {i}: skip the {i} orphan records?" for i in range(60)]
    assert questions(first) == order[:50] and "page 1 of 2" in first
    assert questions(second) == order[50:] and "page 2 of 2" in second


def test_a_confirm_page_names_the_case_offers_cancel_and_redirects_after_the_post(
    console: TestClient,
) -> None:
    case = raise_case(console)
    route(console, case)
    confirm = console.get(f"/dashboard/cases/{case}/answer?option=approve")
    assert confirm.status_code == 200
    assert "medium · run run-8842" in confirm.text and ">Cancel</a>" in confirm.text
    # POST-redirect-GET: the decision, then a page a reload does not re-send
    done = console.post(f"/dashboard/cases/{case}/answer?option=approve", follow_redirects=False)
    assert done.status_code == 303
    assert done.headers["location"] == f"/dashboard/cases/{case}?result=decided"
    page = console.get(done.headers["location"]).text
    assert "Decided. The run is being told." in page
    assert "Decided: approve by dashboard:operator at " in page
    # Nothing is offered for a decided case, nor for an option it does not have
    again = console.get(f"/dashboard/cases/{case}/answer?option=deny")
    assert again.status_code == 409 and "<form" not in again.text.split("</header>")[1]
    other = raise_case(console, packet_id="other")
    route(console, other)
    unknown = console.get(f"/dashboard/cases/{other}/answer?option=launch")
    assert unknown.status_code == 404 and "not one of this case" in unknown.text


def test_a_destructive_answer_is_red_and_needs_an_explicit_tick(console: TestClient) -> None:
    options = [
        {"label": "keep", "value": "keep"},
        {"label": "purge", "value": "purge", "destructive": True, "description": "Deletes it."},
    ]
    response = console.post(
        "/v1/escalations",
        headers={"Authorization": "Bearer agent-t"},
        json={"packet": raise_packet(), "options": options},
    )
    case = response.json()["id"]
    route(console, case)
    assert f'<a class="destructive" href="/dashboard/cases/{case}/answer?option=purge">' in (
        console.get("/dashboard").text
    )
    confirm = console.get(f"/dashboard/cases/{case}/answer?option=purge").text
    assert 'class="primary destructive"' in confirm and 'name="confirm" value="purge"' in confirm
    # Without the tick, the post only asks again
    untick = console.post(f"/dashboard/cases/{case}/answer?option=purge", follow_redirects=False)
    assert untick.headers["location"] == f"/dashboard/cases/{case}/answer?option=purge"
    with Session(engine_of(console)) as session:
        assert session.exec(select(Decision)).all() == []
    ticked = console.post(
        f"/dashboard/cases/{case}/answer?option=purge", data={"confirm": "purge"},
        follow_redirects=False,
    )  # fmt: skip
    assert ticked.headers["location"].endswith("?result=decided")


def raise_packet() -> dict[str, object]:
    from workflows.examples import valid_packet

    return {**valid_packet(), "packet_id": "destructive"}


def test_a_free_text_reply_is_previewed_before_anything_is_recorded(console: TestClient) -> None:
    case = raise_case(console)
    route(console, case)
    preview = console.post(f"/dashboard/cases/{case}/reply/preview", data={"text": "deny it"})
    assert "It decides: deny." in preview.text and "Send this reply" in preview.text
    unsure = console.post(f"/dashboard/cases/{case}/reply/preview", data={"text": "hmm?"})
    assert "It would not decide anything." in unsure.text
    with Session(engine_of(console)) as session:
        assert session.exec(select(Reply)).all() == []
    sent = console.post(
        f"/dashboard/cases/{case}/reply", data={"text": "deny it"}, follow_redirects=False
    )
    assert sent.headers["location"].endswith("?result=decided")
    assert "Decided: deny by dashboard:operator" in console.get(f"/dashboard/cases/{case}").text


def test_the_case_page_tells_its_timeline_in_sentences_with_the_json_behind_a_toggle(
    console: TestClient,
) -> None:
    case = raise_case(
        console,
        evidence=[
            {"kind": "log", "ref": "https://ci.example/logs/1"},
            {"kind": "artifact", "ref": "javascript:alert(1)"},
        ],
    )
    html = console.get(f"/dashboard/cases/{case}").text
    assert re.search(r"<li>\d\d:\d\d accepted<details><summary>details</summary><pre>", html)
    assert '<a href="https://ci.example/logs/1" rel="noopener noreferrer" target="_blank">' in html
    assert "<code>javascript:alert(1)</code>" in html and 'href="javascript' not in html


def test_the_queue_has_no_meta_refresh(console: TestClient, tmp_path: Path) -> None:
    assert 'http-equiv="refresh"' not in console.get("/dashboard").text


def test_an_acknowledgement_shows_on_the_card_and_the_timeline_and_decides_nothing(
    console: TestClient,
) -> None:
    case = raise_case(console)
    route(console, case)
    done = console.post(
        f"/dashboard/cases/{case}/acknowledge", data={"reason": "checking the totals"},
        follow_redirects=False,
    )  # fmt: skip
    assert done.headers["location"] == f"/dashboard/cases/{case}?result=acknowledged"
    page = console.get(done.headers["location"]).text
    assert "acknowledged by dashboard:operator: checking the totals" in page
    assert '<span class="badge acknowledged">acknowledged by dashboard:operator</span>' in (
        console.get("/dashboard").text
    )
    with Session(engine_of(console)) as session:
        assert session.exec(select(Decision)).all() == []
    console.post(f"/dashboard/cases/{case}/answer?option=approve")
    closed = console.post(f"/dashboard/cases/{case}/acknowledge", data={"reason": "late"})
    assert closed.status_code == 409


def test_insights_and_metrics_tell_how_decisions_go(console: TestClient) -> None:
    # Given one case a person decided after 10 minutes and one still open
    decided = raise_case(console, severity="high", packet_id="m1")
    route(console, decided, ago=timedelta(minutes=10))
    console.post(f"/dashboard/cases/{decided}/answer?option=approve")
    waiting = raise_case(console, severity="low", packet_id="m2")
    route(console, waiting)
    # When the operator opens the insights page / Then the time to decision is there
    page = console.get("/dashboard/insights").text
    assert "<strong>high</strong>: p50 10.0 min, p90 10.0 min (1 decisions)" in page
    assert "default applied: 0%" in page
    assert "<strong>dashboard</strong>: p50 10.0 min" in page
    # And Prometheus reads the same, behind an operator token
    assert console.get("/metrics").status_code == 401
    scrape = console.get("/metrics", headers={"Authorization": "Bearer op-t"})
    assert scrape.status_code == 200, scrape.text
    text = scrape.text
    assert 'escalate_open_cases{severity="low",state="awaiting"} 1.0' in text
    assert "escalate_oldest_open_age_seconds " in text
    assert "escalate_decided_not_resumed 0.0" in text
    assert 'escalate_time_to_decision_seconds_count{channel="dashboard",tier="high"} 1.0' in text
    assert (
        'escalate_time_to_decision_seconds_bucket{channel="dashboard",le="900.0",tier="high"} 1.0'
        in text
    )
    assert 'escalate_default_applied_ratio{tier="high"} 0.0' in text
    assert 'escalate_stage_latency_seconds_count{stage="decide"} 1.0' in text


def test_extending_the_deadline_moves_the_countdown_and_says_who_and_why(
    console: TestClient,
) -> None:
    case = raise_case(console, severity="high", packet_id="ext")
    route(console, case, next_action_at=datetime.now(UTC) + timedelta(minutes=10))
    before = re.findall(r'<div class="due">([^<]+)</div>', console.get("/dashboard").text)
    done = console.post(
        f"/dashboard/cases/{case}/extend", data={"minutes": "60", "reason": "vendor at 9"},
        follow_redirects=False,
    )  # fmt: skip
    assert done.headers["location"] == f"/dashboard/cases/{case}?result=extended"
    page = console.get(done.headers["location"]).text
    assert "deadline extended by 1 h, by dashboard:operator: vendor at 9" in page
    after = re.findall(r'<div class="due">([^<]+)</div>', console.get("/dashboard").text)
    assert (before != after and after[0].endswith("h 59 min")) or "1 h" in after[0]
    with Session(engine_of(console)) as session:
        row = session.get(Escalation, case)
        assert row is not None and row.extended_seconds == 3600
    refused = console.post(f"/dashboard/cases/{case}/extend", data={"minutes": "60"})
    assert refused.status_code == 409 and "say why" in refused.text
