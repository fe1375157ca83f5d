"""Admitting a request: the packet's checks plus the shape of its snapshot, options and wake."""

from __future__ import annotations

import re
import secrets
import string
from pathlib import Path
from typing import Any

import pytest

from models.design_file import load_design
from workflows.case import parse_options
from workflows.examples import incomplete_packet, valid_packet
from workflows.intake import DEFAULT_WAKE_QUEUE, Admission, admit, wake_queue
from workflows.secrets import find_secrets

UNKNOWN_FIELD = "unknown field (use packet, snapshot, options, wake, owner)"
KINDS = "none, git, file, http"
QUEUE_NAME_RULE = (
    "wake.queue: must be a Celery queue name (letters, digits and . _ : @ / -, "
    "at most 200 characters)"
)
WAKE_KEY_LIST = (
    "blocked_file, command_file, decision_file, fallback_file, queue, request_file, task, webhook"
)


def github_token() -> str:
    """A fake GitHub token made at run time, so no secret-shaped literal lives in the repo."""
    alphabet = string.ascii_letters + string.digits
    return "ghp_" + "".join(secrets.choice(alphabet) for _ in range(36))


def request(**parts: Any) -> dict[str, Any]:
    return {"packet": valid_packet(), **parts}


def problems_of(raw: object) -> tuple[str, ...]:
    return admit(raw, find_secrets=find_secrets).problems


# --- accepted ---------------------------------------------------------------------------------


def test_given_a_bare_valid_packet_then_it_is_accepted_with_the_defaults() -> None:
    # Given / When
    admission = admit(request(), find_secrets=find_secrets)
    # Then
    assert admission.accepted
    assert admission.problems == ()
    assert admission.packet == valid_packet()
    assert admission.snapshot == {}
    assert admission.options == parse_options(None)
    assert admission.wake == {}
    assert admission.check is not None
    assert admission.check.passed


def test_given_a_full_valid_request_then_every_part_is_kept() -> None:
    # Given a request with a snapshot, options and wake channels
    snapshot = {
        "verified": "unit tests passed",
        "proof": "ci/run/8842",
        "checked_at": "2026-10-16T09:00:00+00:00",
        "fingerprint": {"kind": "git", "path": "."},
        "scheduled_task_ids": ["5b1c0f1e-3a43-4b8f-9d1e-2f6b2f0c9a11"],
    }
    options = [{"label": "Skip", "value": "skip", "description": "Leave the 3 rows out."}, "stop"]
    wake = {
        "task": "agent.resume",
        "webhook": "https://agent.example/wake",
        "fallback_file": "BLOCKED.md",
    }
    raw = request(snapshot=snapshot, options=options, wake=wake)
    # When
    admission = admit(raw, find_secrets=find_secrets)
    # Then
    assert admission.problems == ()
    assert admission.snapshot == snapshot
    assert admission.options == parse_options(options)
    assert admission.wake == wake
    assert admission.packet == raw["packet"]
    assert admission.packet is not raw["packet"]


@pytest.mark.parametrize(
    "fingerprint",
    [
        {"kind": "none"},
        {"kind": "git", "path": "."},
        {"kind": "file", "path": "data/export.csv"},
        {"kind": "http", "url": "https://svc.example/state"},
    ],
)
def test_given_each_fingerprint_kind_with_what_it_needs_then_accepted(
    fingerprint: dict[str, str],
) -> None:
    assert problems_of(request(snapshot={"fingerprint": fingerprint})) == ()


@pytest.mark.parametrize("parts", [{"snapshot": None}, {"wake": None}, {"options": None}])
def test_given_null_parts_then_they_count_as_absent(parts: dict[str, Any]) -> None:
    admission = admit(request(**parts), find_secrets=find_secrets)
    assert admission.accepted


def test_given_a_packet_with_warnings_then_it_is_accepted_and_the_warnings_kept() -> None:
    packet = {**valid_packet(), "remaining": []}
    admission = admit({"packet": packet}, find_secrets=find_secrets)
    assert admission.accepted
    assert admission.check is not None
    assert admission.check.warnings == ("remaining: empty list, no remaining work stated",)


def test_given_http_and_https_webhooks_then_both_are_accepted() -> None:
    assert problems_of(request(wake={"webhook": "http://localhost:8080/wake"})) == ()
    assert problems_of(request(wake={"webhook": "https://agent.example/wake"})) == ()


# --- refused: the request itself ---------------------------------------------------------------


@pytest.mark.parametrize("raw", [None, [], ["packet"], "packet", 3, True])
def test_given_a_request_that_is_not_an_object_then_it_is_refused(raw: object) -> None:
    admission = admit(raw, find_secrets=find_secrets)
    assert admission == Admission(("request: must be an object with a packet",))
    assert not admission.accepted


def test_given_unknown_top_level_keys_then_each_is_named_in_sorted_order() -> None:
    problems = problems_of(request(zeta=1, callback="x"))
    assert problems == (f"callback: {UNKNOWN_FIELD}", f"zeta: {UNKNOWN_FIELD}")


@pytest.mark.parametrize("raw", [{}, {"packet": None}, {"packet": ["a"]}, {"packet": "{}"}])
def test_given_no_packet_object_then_the_packet_line_is_not_prefixed_twice(raw: object) -> None:
    assert problems_of(raw) == ("packet is not a JSON object",)


def test_given_a_packet_failing_its_checks_then_each_error_is_prefixed_packet() -> None:
    # Given the incomplete worked example (2 errors)
    assert problems_of({"packet": incomplete_packet()}) == (
        "packet.requested_action: missing or empty",
        "packet.evidence: missing, not a list, or empty",
    )


def test_given_packet_errors_of_every_kind_then_all_are_reported_with_the_prefix() -> None:
    packet = {
        **valid_packet(),
        "run_id": " ",
        "severity": "urgent",
        "attempted": [],
        "evidence": [{"kind": "screenshot", "ref": ""}],
    }
    assert problems_of({"packet": packet}) == (
        "packet.run_id: missing or empty",
        "packet.severity: bad value 'urgent'",
        "packet.attempted: empty list",
        "packet.evidence: bad kind 'screenshot'",
    )


def test_a_refused_admission_carries_the_check_but_no_normalised_parts() -> None:
    admission = admit({"packet": incomplete_packet(), "wake": {"task": "t"}})
    assert not admission.accepted
    assert admission.check is not None
    assert admission.check.verdict == "FAIL"
    assert (admission.packet, admission.snapshot, admission.options, admission.wake) == (
        {},
        {},
        (),
        {},
    )


# --- refused: the snapshot ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("snapshot", "problem"),
    [
        ("git", "snapshot: must be an object"),
        (["git"], "snapshot: must be an object"),
        ({"verified": 1}, "snapshot.verified: must be text"),
        ({"proof": ["ci"]}, "snapshot.proof: must be text"),
        ({"checked_at": 1760000000}, "snapshot.checked_at: must be text"),
        (
            {"scheduled_task_ids": "5b1c0f1e"},
            "snapshot.scheduled_task_ids: must be a list of task ids",
        ),
        ({"scheduled_task_ids": [""]}, "snapshot.scheduled_task_ids: must be a list of task ids"),
        (
            {"scheduled_task_ids": ["a", 7]},
            "snapshot.scheduled_task_ids: must be a list of task ids",
        ),
        (
            {"fingerprint": "git"},
            "snapshot.fingerprint: must be an object like {kind: git, path: .}",
        ),
        (
            {"fingerprint": {"kind": "svn"}},
            f"snapshot.fingerprint.kind: 'svn' is not one of {KINDS}",
        ),
        ({"fingerprint": {}}, f"snapshot.fingerprint.kind: None is not one of {KINDS}"),
        (
            {"fingerprint": {"kind": "GIT"}},
            f"snapshot.fingerprint.kind: 'GIT' is not one of {KINDS}",
        ),
        ({"fingerprint": {"kind": "git"}}, "snapshot.fingerprint.path: required for kind git"),
        (
            {"fingerprint": {"kind": "git", "path": ""}},
            "snapshot.fingerprint.path: required for kind git",
        ),
        (
            {"fingerprint": {"kind": "file", "url": "https://x"}},
            "snapshot.fingerprint.path: required for kind file",
        ),
        (
            {"fingerprint": {"kind": "file", "path": 3}},
            "snapshot.fingerprint.path: required for kind file",
        ),
        (
            {"fingerprint": {"kind": "http", "path": "."}},
            "snapshot.fingerprint.url: required for kind http",
        ),
    ],
)
def test_given_a_bad_snapshot_then_the_problem_names_the_field(
    snapshot: object, problem: str
) -> None:
    assert problems_of(request(snapshot=snapshot)) == (problem,)


def test_given_several_snapshot_problems_then_all_are_reported() -> None:
    snapshot = {"verified": 1, "scheduled_task_ids": None, "fingerprint": {"kind": "git"}}
    assert problems_of(request(snapshot=snapshot)) == (
        "snapshot.verified: must be text",
        "snapshot.scheduled_task_ids: must be a list of task ids",
        "snapshot.fingerprint.path: required for kind git",
    )


@pytest.mark.parametrize("kind", [["git"], {"name": "git"}])
def test_given_a_fingerprint_kind_that_is_not_text_then_it_is_refused(kind: object) -> None:
    assert problems_of(request(snapshot={"fingerprint": {"kind": kind}})) == (
        f"snapshot.fingerprint.kind: {kind!r} is not one of {KINDS}",
    )


# --- refused: the wake-up -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wake", "problems"),
    [
        ("agent.resume", ("wake: must be an object like {task: NAME, webhook: URL}",)),
        (["agent.resume"], ("wake: must be an object like {task: NAME, webhook: URL}",)),
        (
            {"email": "a@b.example"},
            (f"wake.email: unknown (use {WAKE_KEY_LIST})",),
        ),
        (
            {"sms": "1", "email": "a@b.example"},
            (
                f"wake.email: unknown (use {WAKE_KEY_LIST})",
                f"wake.sms: unknown (use {WAKE_KEY_LIST})",
            ),
        ),
        ({"task": ""}, ("wake.task: must be non-empty text",)),
        ({"task": 3}, ("wake.task: must be non-empty text",)),
        ({"fallback_file": "   "}, ("wake.fallback_file: must be non-empty text",)),
        ({"webhook": None}, ("wake.webhook: must be non-empty text",)),
        ({"webhook": "ftp://agent.example/wake"}, ("wake.webhook: must be an http(s) URL",)),
        ({"webhook": "agent.example/wake"}, ("wake.webhook: must be an http(s) URL",)),
        ({"webhook": "javascript:alert(1)"}, ("wake.webhook: must be an http(s) URL",)),
        ({"task": "agent.wake", "queue": ""}, ("wake.queue: must be non-empty text",)),
        ({"task": "agent.wake", "queue": 7}, ("wake.queue: must be non-empty text",)),
        ({"task": "agent.wake", "queue": "my agent"}, (QUEUE_NAME_RULE,)),
        ({"task": "agent.wake", "queue": "-q"}, (QUEUE_NAME_RULE,)),
        ({"task": "agent.wake", "queue": "q" * 201}, (QUEUE_NAME_RULE,)),
        (
            {"webhook": "https://agent.example/wake", "queue": "my-agent"},
            ("wake.queue: is where wake.task is sent; name wake.task too",),
        ),
    ],
)
def test_given_a_bad_wake_then_the_problem_names_the_field(
    wake: object, problems: tuple[str, ...]
) -> None:
    assert problems_of(request(wake=wake)) == problems


@pytest.mark.parametrize(
    "queue", ["my-agent", "celery", "kandev.agents", "team:ops@eu/wake", "q" * 200]
)
def test_given_the_agents_own_queue_then_the_wake_is_accepted(queue: str) -> None:
    wake = {"task": "agent.wake", "queue": queue}
    admission = admit(request(wake=wake), find_secrets=find_secrets, service_queue="escalation")
    assert admission.accepted and admission.wake == wake


def test_given_the_services_own_queue_then_the_wake_is_refused_naming_it() -> None:
    # Given a service consuming `escalation`, and a run that names that queue for its wake
    wake = {"task": "agent.wake", "queue": "escalation"}
    # When admitted / Then refused: the service's workers would discard the task unregistered
    assert admit(request(wake=wake), service_queue="escalation").problems == (
        "wake.queue: 'escalation' is this service's own queue: its workers discard your task; "
        "name the queue your worker consumes",
    )


def test_given_a_service_on_celerys_default_queue_then_a_wake_must_name_its_queue() -> None:
    # Given a service started on `celery`, Celery's default queue, and a wake naming none
    admission = admit(request(wake={"task": "agent.wake"}), service_queue="celery")
    # Then it is refused: the default would be the service's own queue
    assert admission.problems == (
        "wake.queue: 'celery' is this service's own queue (Celery's default, used when "
        "wake.queue is absent): its workers discard your task; name the queue your worker "
        "consumes",
    )
    # And a webhook alone needs no queue
    assert admit(
        request(wake={"webhook": "https://agent.example/w"}), service_queue="celery"
    ).accepted


def test_given_no_queue_then_the_wake_task_goes_to_celerys_default_queue() -> None:
    assert wake_queue({"task": "agent.wake"}) == DEFAULT_WAKE_QUEUE == "celery"
    assert wake_queue({"task": "agent.wake", "queue": "my-agent"}) == "my-agent"


# --- refused: the options -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ("approve", "options: must be a list of {label, value, description}"),
        ([{"label": ""}], "options[0].label: missing or empty"),
        (["ok", {"label": "x", "resumes": "no"}], "options[1].resumes: must be true or false"),
        (["Approve", "approve"], "options: two options share a label"),
    ],
)
def test_given_bad_options_then_the_parse_error_is_a_problem(options: object, problem: str) -> None:
    assert problems_of(request(options=options)) == (problem,)


def test_given_problems_everywhere_then_every_one_is_reported_in_order() -> None:
    # Given a request wrong in every part / When admitted / Then nothing is left for a retry
    raw = {
        "packet": incomplete_packet(),
        "snapshot": {"fingerprint": {"kind": "http"}},
        "wake": {"webhook": "ftp://x"},
        "options": "approve",
        "extra": True,
    }
    assert problems_of(raw) == (
        f"extra: {UNKNOWN_FIELD}",
        "packet.requested_action: missing or empty",
        "packet.evidence: missing, not a list, or empty",
        "snapshot.fingerprint.url: required for kind http",
        "wake.webhook: must be an http(s) URL",
        "options: must be a list of {label, value, description}",
    )


# --- secrets: named by field and kind, never by value ------------------------------------------


def test_given_a_token_in_the_packet_then_the_field_and_kind_are_named_not_the_value() -> None:
    token = github_token()
    packet = {**valid_packet(), "trigger_detail": f"push failed with {token}"}
    admission = admit({"packet": packet}, find_secrets=find_secrets)
    assert admission.problems == ("packet.trigger_detail: contains a secret (GitHub token)",)
    assert token not in repr(admission)


def test_given_a_token_deep_in_the_packet_then_its_path_is_named() -> None:
    token = github_token()
    packet = valid_packet()
    packet["evidence"][1]["ref"] = f"artifacts/{token}.txt"
    problems = problems_of({"packet": packet})
    assert problems == ("packet.evidence[1].ref: contains a secret (GitHub token)",)
    assert token not in "".join(problems)


def test_given_a_token_in_the_snapshot_then_it_is_refused_by_field_and_kind() -> None:
    token = github_token()
    admission = admit(
        request(snapshot={"proof": f"curl -H 'Authorization: token {token}'"}),
        find_secrets=find_secrets,
    )
    assert admission.problems == ("snapshot.proof: contains a secret (GitHub token)",)
    assert token not in repr(admission)


def test_given_url_credentials_in_the_fingerprint_then_they_are_refused() -> None:
    password = "Pw" + secrets.token_hex(8)
    url = f"https://deploy:{password}@svc.example/state"
    problems = problems_of(request(snapshot={"fingerprint": {"kind": "http", "url": url}}))
    assert problems == ("snapshot.fingerprint.url: contains a secret (URL credentials)",)
    assert password not in "".join(problems)


def test_given_a_secret_in_an_option_then_it_is_refused_naming_the_option_field() -> None:
    token = github_token()
    options = ["approve", {"label": "use token", "description": f"push with {token}"}]
    problems = problems_of(request(options=options))
    assert len(problems) == 1
    # the path is the option's index and field; the kind is named, the value is not
    assert problems[0].startswith("options")
    assert "[1]" in problems[0]
    assert problems[0].endswith(".description: contains a secret (GitHub token)")
    assert token not in problems[0]


def test_given_secrets_in_every_part_then_each_is_reported() -> None:
    token = github_token()
    raw = {
        "packet": {**valid_packet(), "blocked_on": f"token {token} was rejected"},
        "snapshot": {"verified": token},
        "options": [{"label": "retry", "description": token}],
    }
    admission = admit(raw, find_secrets=find_secrets)
    assert not admission.accepted
    assert [re.split(r"[.\[]", line, maxsplit=1)[0] for line in admission.problems] == [
        "packet",
        "snapshot",
        "options",
    ]
    assert all(line.endswith("(GitHub token)") for line in admission.problems)
    assert token not in repr(admission)


def test_given_a_clean_request_then_the_secret_finder_reports_nothing() -> None:
    # Given ids, a git sha and a task uuid, which look random but are not secrets
    snapshot = {
        "verified": "git 1f3e9a7c0b2d4e6f8a1b3c5d7e9f0a2b4c6d8e0f on main",
        "scheduled_task_ids": ["5b1c0f1e-3a43-4b8f-9d1e-2f6b2f0c9a11"],
        "fingerprint": {"kind": "git", "path": "."},
    }
    assert problems_of(request(snapshot=snapshot, options=["approve", "deny"])) == ()


def test_given_url_credentials_in_the_wake_webhook_then_they_are_refused() -> None:
    password = "Pw" + secrets.token_hex(8)
    wake = {"webhook": f"https://agent:{password}@agent.example/wake"}
    problems = problems_of(request(wake=wake))
    assert problems == ("wake.webhook: contains a secret (URL credentials)",)


def test_given_several_bad_wake_values_then_each_is_reported() -> None:
    # (compared as a set: the order of these lines follows a set today, see the report)
    problems = problems_of(request(wake={"task": "", "fallback_file": 1, "webhook": " "}))
    assert {
        "wake.task: must be non-empty text",
        "wake.fallback_file: must be non-empty text",
        "wake.webhook: must be non-empty text",
    } <= set(problems)


# --- the design fills what a packet leaves to it -----------------------------------------------

DESIGN = load_design(Path(__file__).resolve().parents[2] / "examples" / "design.yaml")


def without(*keys: str, **changes: Any) -> dict[str, Any]:
    packet = {**valid_packet(), **changes}
    return {key: value for key, value in packet.items() if key not in keys}


@pytest.mark.parametrize(
    ("severity", "recipient", "waiting"),
    [
        ("low", "ops-low", "safe_subset"),
        ("medium", "ops", "read_only"),
        ("high", "oncall", "paused"),
        ("critical", "oncall-pager", "stopped"),
    ],
)
def test_given_no_recipient_or_waiting_then_the_severitys_tier_fills_them(
    severity: str, recipient: str, waiting: str
) -> None:
    # Given a packet that leaves who decides and how it waits to the design
    packet = without("recipient", "waiting_behavior", severity=severity)
    if severity in ("high", "critical"):  # two evidence entries, so no warning either
        packet["evidence"] = [{"kind": "log", "ref": "a"}, {"kind": "test", "ref": "b"}]
    # When admitted with the design
    admission = admit({"packet": packet}, find_secrets=find_secrets, design=DESIGN)
    # Then it is accepted with the tier's primary and waiting behavior, and says it filled them
    assert admission.accepted, admission.problems
    assert (admission.packet["recipient"], admission.packet["waiting_behavior"]) == (
        recipient,
        waiting,
    )
    assert admission.filled == ("recipient", "waiting_behavior")


def test_given_a_null_recipient_then_it_is_filled_and_a_given_waiting_kept() -> None:
    packet = {**valid_packet(), "recipient": None, "waiting_behavior": "paused"}
    admission = admit({"packet": packet}, design=DESIGN)
    assert admission.accepted
    assert (admission.packet["recipient"], admission.packet["waiting_behavior"]) == (
        "ops",
        "paused",
    )
    assert admission.filled == ("recipient",)


def test_given_both_then_the_packet_is_taken_as_it_came() -> None:
    admission = admit({"packet": valid_packet()}, design=DESIGN)
    assert admission.packet == valid_packet() and admission.filled == ()


@pytest.mark.parametrize(
    ("packet", "errors"),
    [
        # A blank value is the packet's own, and wrong: the checks name it
        (
            {**valid_packet(), "recipient": "  "},
            ("packet.recipient: missing or empty",),
        ),
        # No severity the design knows: nothing to fill from
        (
            without("recipient", severity="urgent"),
            (
                "packet.recipient: missing or empty",
                "packet.severity: bad value 'urgent'",
            ),
        ),
    ],
)
def test_given_nothing_the_design_can_fill_then_the_checks_report_it(
    packet: dict[str, Any], errors: tuple[str, ...]
) -> None:
    admission = admit({"packet": packet}, design=DESIGN)
    assert admission.problems == errors and admission.filled == ()


def test_without_a_design_nothing_is_filled() -> None:
    admission = admit({"packet": without("recipient")})
    assert admission.problems == ("packet.recipient: missing or empty",)
