"""Answer options from an intake payload: defaults, shapes, stop words and refusals."""

from __future__ import annotations

import dataclasses

import pytest

from workflows.case import (
    DEFAULT_OPTIONS,
    STOP_WORDS,
    Case,
    Option,
    options_to_json,
    parse_options,
)
from workflows.states import State

APPROVE = Option("approve", "approve", "Do what the run asks, then resume.", True)
DENY = Option("deny", "deny", "Do not do it; the run stops.", False)


@pytest.mark.parametrize("raw", [None, []])
def test_given_no_options_when_parsed_then_the_defaults_approve_and_deny(raw: object) -> None:
    # When / Then: approve resumes, deny stops
    assert parse_options(raw) == (APPROVE, DENY)


def test_the_default_options_constant_is_not_changed_by_parsing() -> None:
    before = [dict(entry) for entry in DEFAULT_OPTIONS]
    parse_options(None)
    assert [dict(entry) for entry in DEFAULT_OPTIONS] == before


def test_given_plain_strings_when_parsed_then_each_is_label_and_value() -> None:
    # Given / When
    options = parse_options(["retry", "skip"])
    # Then
    assert options == (Option("retry", "retry", "", True), Option("skip", "skip", "", True))


def test_given_full_objects_when_parsed_then_every_field_is_kept() -> None:
    raw = [
        {"label": "Use backup", "value": "backup", "description": "Restore from last night."},
        {"label": "Wait", "value": "wait", "description": "Leave it.", "resumes": False},
    ]
    assert parse_options(raw) == (
        Option("Use backup", "backup", "Restore from last night.", True),
        Option("Wait", "wait", "Leave it.", False),
    )


def test_given_mixed_strings_and_objects_when_parsed_then_order_is_kept() -> None:
    options = parse_options(["first", {"label": "second"}, "third"])
    assert [option.label for option in options] == ["first", "second", "third"]


def test_given_padded_text_when_parsed_then_it_is_stripped() -> None:
    (option,) = parse_options([{"label": "  go  ", "value": " go-now ", "description": " d "}])
    assert option == Option("go", "go-now", "d", True)


def test_given_no_value_then_the_value_is_the_label() -> None:
    (option,) = parse_options([{"label": "Skip it"}])
    assert option.value == "Skip it"


@pytest.mark.parametrize("word", sorted(STOP_WORDS))
def test_given_a_stop_word_value_then_the_option_does_not_resume(word: str) -> None:
    # Given an option whose value means stopping / Then choosing it stops the run (§3.6)
    assert parse_options([word])[0].resumes is False
    assert parse_options([{"label": "Whatever", "value": word.upper()}])[0].resumes is False
    assert parse_options([{"label": "Pad", "value": f"  {word}  "}])[0].resumes is False


def test_the_stop_words_cover_the_usual_refusals() -> None:
    assert {"stop", "abort", "deny", "reject", "cancel", "halt", "no"} <= STOP_WORDS


@pytest.mark.parametrize("word", ["approve", "retry", "skip", "queue", "proceed", "yes"])
def test_given_any_other_value_then_the_option_resumes(word: str) -> None:
    assert parse_options([word])[0].resumes is True


def test_an_explicit_resumes_overrides_the_stop_words() -> None:
    # Given explicit flags / Then they win over the guess from the value
    options = parse_options(
        [{"label": "stop", "resumes": True}, {"label": "proceed", "resumes": False}]
    )
    assert [option.resumes for option in options] == [True, False]


def test_the_stop_word_is_read_from_the_value_not_the_label() -> None:
    # Given a label that reads like a stop but a value that does not (and the reverse)
    options = parse_options(
        [{"label": "Stop", "value": "pause-and-resume"}, {"label": "Go", "value": "abort"}]
    )
    assert [option.resumes for option in options] == [True, False]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("approve", "options: must be a list of {label, value, description}"),
        ({"label": "approve"}, "options: must be a list of {label, value, description}"),
        (3, "options: must be a list of {label, value, description}"),
        ([3], "options[0]: must be text or an object with a label"),
        (["ok", None], "options[1]: must be text or an object with a label"),
        (["ok", ["nested"]], "options[1]: must be text or an object with a label"),
        ([""], "options[0].label: missing or empty"),
        (["   "], "options[0].label: missing or empty"),
        ([{}], "options[0].label: missing or empty"),
        ([{"value": "x"}], "options[0].label: missing or empty"),
        (["ok", {"label": 7}], "options[1].label: missing or empty"),
        ([{"label": "ok", "value": ""}], "options[0].value: must be non-empty text"),
        ([{"label": "ok", "value": "  "}], "options[0].value: must be non-empty text"),
        ([{"label": "ok", "value": 1}], "options[0].value: must be non-empty text"),
        ([{"label": "ok", "value": None}], "options[0].value: must be non-empty text"),
        (["a", {"label": "ok", "description": 5}], "options[1].description: must be text"),
        ([{"label": "ok", "description": None}], "options[0].description: must be text"),
        ([{"label": "ok", "resumes": "yes"}], "options[0].resumes: must be true or false"),
        ([{"label": "ok", "resumes": 1}], "options[0].resumes: must be true or false"),
        ([{"label": "ok", "resumes": None}], "options[0].resumes: must be true or false"),
    ],
)
def test_given_a_bad_shape_when_parsed_then_value_error_names_index_and_field(
    raw: object, message: str
) -> None:
    # When / Then
    with pytest.raises(ValueError) as refused:
        parse_options(raw)
    assert str(refused.value) == message


@pytest.mark.parametrize(
    "raw",
    [
        ["approve", "approve"],
        ["Approve", "approve"],
        ["approve", {"label": " APPROVE ", "value": "other"}],
        [{"label": "a", "value": "x"}, "b", {"label": "A", "value": "y"}],
    ],
)
def test_given_two_options_with_one_label_then_they_are_refused(raw: list[object]) -> None:
    # Given labels equal up to case and padding / Then a reply could not tell them apart
    with pytest.raises(ValueError, match="options: two options share a label"):
        parse_options(raw)


def test_options_to_json_round_trips_through_parse_options() -> None:
    # Given parsed options / When stored as JSON and read back / Then nothing is lost
    options = parse_options(
        [{"label": "Use backup", "value": "backup", "description": "d"}, "stop", "retry"]
    )
    stored = options_to_json(options)
    assert stored == [
        {"label": "Use backup", "value": "backup", "description": "d", "resumes": True},
        {"label": "stop", "value": "stop", "description": "", "resumes": False},
        {"label": "retry", "value": "retry", "description": "", "resumes": True},
    ]
    assert parse_options(stored) == options


def test_option_and_case_are_frozen() -> None:
    # Given the pure values / Then stages cannot change them in place
    case = Case(id="c1", run_id="r1", packet_id="p1", state=State.RECEIVED, packet={})
    with pytest.raises(dataclasses.FrozenInstanceError):
        APPROVE.label = "x"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        case.state = State.CLOSED  # type: ignore[misc]


def test_a_case_has_empty_defaults_for_what_comes_later() -> None:
    case = Case(id="c1", run_id="r1", packet_id="p1", state=State.RECEIVED, packet={})
    assert case.snapshot == {}
    assert case.options == ()
    assert case.wake == {}
    assert case.cites_id is None
    assert case.created_at is None
    assert case.routed_at is None
