"""Reply grammar (SPEC §7): a reply becomes a decision, or a comment, never a guess."""

from __future__ import annotations

import pytest

from workflows.case import Option, parse_options
from workflows.replies import ReplyMatch, match_option_name, match_reply

DEFAULTS = parse_options(None)  # approve, deny
APPROVE, DENY = DEFAULTS
BACKUP_OPTIONS = parse_options(
    [
        {"label": "Use backup", "value": "backup", "description": "Restore last night's copy."},
        {"label": "Retry", "value": "retry"},
        {"label": "Stop", "value": "stop"},
    ]
)
USE_BACKUP, RETRY, STOP = BACKUP_OPTIONS


def label_of(match: ReplyMatch) -> str | None:
    return match.option.label if match.option else None


# --- decisions --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "reply", "expected"),
    [
        (DEFAULTS, "approve", APPROVE),
        (DEFAULTS, "deny", DENY),
        (DEFAULTS, "APPROVE", APPROVE),
        (DEFAULTS, "Deny", DENY),
        (DEFAULTS, "  approve  ", APPROVE),
        (DEFAULTS, "approve.", APPROVE),
        (DEFAULTS, "Approve!!", APPROVE),
        (DEFAULTS, '"deny"', DENY),
        (BACKUP_OPTIONS, "Use backup", USE_BACKUP),
        (BACKUP_OPTIONS, "use   BACKUP", USE_BACKUP),
        (BACKUP_OPTIONS, "backup", USE_BACKUP),  # by value
        (BACKUP_OPTIONS, "STOP", STOP),
    ],
)
def test_given_a_reply_naming_an_option_then_it_decides_exactly(
    options: tuple[Option, ...], reply: str, expected: Option
) -> None:
    # When / Then
    assert match_reply(options, reply) == ReplyMatch("decision", expected, "exact")


@pytest.mark.parametrize(
    ("options", "reply", "expected"),
    [
        (DEFAULTS, "approve, go ahead", APPROVE),
        (DEFAULTS, "Approve - the totals look right", APPROVE),
        (DEFAULTS, "deny it, too risky", DENY),
        (DEFAULTS, "app", APPROVE),
        (DEFAULTS, "appr", APPROVE),
        (DEFAULTS, "de", DENY),
        (DEFAULTS, "DEN", DENY),
        (BACKUP_OPTIONS, "use backup please", USE_BACKUP),
        (BACKUP_OPTIONS, "use", USE_BACKUP),
        (BACKUP_OPTIONS, "ret", RETRY),
        (BACKUP_OPTIONS, "retry once more", RETRY),
    ],
)
def test_given_a_reply_starting_with_an_option_then_it_decides_by_prefix(
    options: tuple[Option, ...], reply: str, expected: Option
) -> None:
    assert match_reply(options, reply) == ReplyMatch("decision", expected, "prefix")


@pytest.mark.parametrize(
    ("options", "reply", "expected"),
    [
        (DEFAULTS, "aprove", APPROVE),
        (DEFAULTS, "approev", APPROVE),
        (DEFAULTS, "aprove it", APPROVE),
        (DEFAULTS, "denny", DENY),
        (BACKUP_OPTIONS, "retyr", RETRY),
        (parse_options(["rollback", "rollout"]), "rolback", parse_options(["rollback"])[0]),
    ],
)
def test_given_a_typo_close_to_one_option_then_it_decides_by_fuzzy_match(
    options: tuple[Option, ...], reply: str, expected: Option
) -> None:
    assert match_reply(options, reply) == ReplyMatch("decision", expected, "fuzzy")


def test_a_past_tense_label_still_decides_for_that_option() -> None:
    match = match_reply(DEFAULTS, "approved")
    assert (match.kind, label_of(match)) == ("decision", "approve")


def test_an_exact_label_wins_over_a_longer_label_it_starts() -> None:
    # Given "app" is an option of its own and also the start of "approve"
    options = parse_options(["app", "approve"])
    assert match_reply(options, "app") == ReplyMatch("decision", options[0], "exact")
    assert match_reply(options, "approve") == ReplyMatch("decision", options[1], "exact")


def test_the_decision_is_the_option_with_its_value_and_resumes_flag() -> None:
    match = match_reply(BACKUP_OPTIONS, "stop now")
    assert match.decides
    assert match.option == Option("Stop", "stop", "", False)


# --- ambiguous: more than one option fits ------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "reply"),
    [
        (["approve", "apply"], "ap"),
        (["approve", "apply"], "app"),
        (["retry", "retro"], "retr"),
        (["approve all", "approve none"], "approve"),
        (["release", "relapse"], "relase"),  # a typo as close to one as to the other
        (["deploy", "delay"], "deplay"),
    ],
)
def test_given_a_reply_fitting_two_options_then_it_is_ambiguous(
    labels: list[str], reply: str
) -> None:
    # Then nothing is decided: never fabricate an answer under ambiguity (§9)
    match = match_reply(parse_options(labels), reply)
    assert match == ReplyMatch("ambiguous")
    assert not match.decides


def test_a_reply_naming_the_longer_of_two_nested_labels_never_picks_the_shorter() -> None:
    # Given "skip" and "skip all" / When the reply starts with "skip all"
    options = parse_options(["skip", "skip all"])
    match = match_reply(options, "skip all now")
    # Then "skip" (the narrower choice) is never what was decided
    assert match.option != options[0]


# --- comments: nothing is decided --------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        "don't approve",
        "dont approve",
        "Don't approve yet",
        "DO NOT deny",
        "do not skip",
        "not approve",
        "not now",
        "never",
        "no, don't approve",
        "no don't",
        "please don't deny",
        "Don’t approve",  # the curly apostrophe phones type
    ],
)
def test_given_a_negated_reply_then_it_is_a_comment(reply: str) -> None:
    # Given a reply that names an option only to refuse it / Then it decides nothing
    assert match_reply(DEFAULTS, reply) == ReplyMatch("comment")
    assert match_reply(parse_options(["skip", "approve", "deny"]), reply) == ReplyMatch("comment")


@pytest.mark.parametrize(
    "reply",
    [
        "should I skip?",
        "what happens if I deny?",
        "Why does it need approval?",
    ],
)
def test_given_a_question_back_then_it_is_a_comment(reply: str) -> None:
    assert match_reply(parse_options(["approve", "deny", "skip"]), reply) == ReplyMatch("comment")


@pytest.mark.parametrize(
    "reply",
    ["approve?", "Skip??", "aprove?", "approve, or should I wait?", "deny? what happens then?"],
)
def test_given_a_question_back_naming_an_option_then_it_is_still_a_comment(reply: str) -> None:
    # Given the operator asks back about an option / Then the question decides nothing (§7)
    assert match_reply(parse_options(["approve", "deny", "skip"]), reply) == ReplyMatch("comment")


@pytest.mark.parametrize("reply", ["", "   ", "\n\t", "?!", "...", "''"])
def test_given_an_empty_reply_then_it_is_a_comment(reply: str) -> None:
    assert match_reply(DEFAULTS, reply) == ReplyMatch("comment")


@pytest.mark.parametrize(
    "reply",
    [
        "thanks, looking into it",
        "I don't approve",
        "please approve",  # does not start with an option: not guessed
        "yes",
        "ok",
        "no",
        "a",  # one letter is too short to be a prefix
        "lgtm",
        "xyz approve",
    ],
)
def test_given_unrelated_text_then_it_is_a_comment(reply: str) -> None:
    match = match_reply(DEFAULTS, reply)
    assert match == ReplyMatch("comment")
    assert not match.decides
    assert match.option is None
    assert match.matched_by is None


def test_given_no_options_then_every_reply_is_a_comment() -> None:
    assert match_reply((), "approve") == ReplyMatch("comment")


def test_an_option_named_no_can_still_be_chosen() -> None:
    # Given yes/no options / Then "no" is the option, while "not sure" stays a comment
    options = parse_options(["yes", "no"])
    assert match_reply(options, "no") == ReplyMatch("decision", options[1], "exact")
    assert match_reply(options, "not sure") == ReplyMatch("comment")


def test_only_a_decision_decides() -> None:
    assert ReplyMatch("decision", APPROVE, "exact").decides
    assert not ReplyMatch("ambiguous").decides
    assert not ReplyMatch("comment").decides


# --- buttons: the option named exactly ---------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Use backup", USE_BACKUP),
        ("use backup", USE_BACKUP),
        ("backup", USE_BACKUP),
        ("BACKUP", USE_BACKUP),
        (" retry ", RETRY),
        ("Retry.", RETRY),
        ("stop", STOP),
        ("ret", None),  # buttons send names, not prefixes
        ("retyr", None),  # nor typos
        ("", None),
        ("don't stop", None),
    ],
)
def test_match_option_name_finds_an_option_by_its_exact_label_or_value(
    name: str, expected: Option | None
) -> None:
    assert match_option_name(BACKUP_OPTIONS, name) == expected


def test_match_option_name_with_no_options_is_none() -> None:
    assert match_option_name((), "approve") is None
