"""Reply grammar (SPEC §6, §7): a reply becomes a decision, or a comment, never a guess."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from api.parse_reply_cli import register
from workflows.case import Option, parse_options
from workflows.replies import GRAMMAR_VERSION, ReplyMatch, clarification, match_reply, parse_reply
from workflows.reply_vocabulary import match_option_name

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


# --- the labelled corpus (tests/workflows/reply_corpus.jsonl) ---------------------------------

CORPUS_PATH = Path(__file__).with_name("reply_corpus.jsonl")
CORPUS: list[dict[str, Any]] = [
    json.loads(line) for line in CORPUS_PATH.read_text(encoding="utf-8").splitlines() if line
]
DECIDING = frozenset({"decision", "command", "confirm"})


def corpus_id(row: dict[str, Any]) -> str:
    reply = str(row["reply"]).replace("\n", "\\n").replace("\t", "\\t")
    return reply if reply.strip() else repr(reply)


def parse_row(row: dict[str, Any], reply: str | None = None) -> ReplyMatch:
    return parse_reply(
        row["reply"] if reply is None else reply,
        parse_options(row["options"]) if row["options"] else (),
        pipeline=row["pipeline"],
        critical=row["critical"],
        destructive=frozenset(row.get("destructive", ())),
        allowed_commands=row.get("allowed"),
    )


@pytest.mark.parametrize("row", CORPUS, ids=corpus_id)
def test_given_a_labelled_reply_then_it_is_read_as_labelled(row: dict[str, Any]) -> None:
    # Given a reply, the case's options and mode / When parsed
    match = parse_row(row)
    expect = row["expect"]
    # Then the kind, the option and the command are the labelled ones: never another action
    chosen = match.option.label if match.option else None
    assert (match.kind, chosen, match.command) == (
        expect["kind"],
        expect.get("option"),
        expect.get("command"),
    ), match.to_dict()
    for extra in ("matched_by", "needs_confirmation"):
        if extra in expect:
            assert getattr(match, extra) == expect[extra], match.to_dict()
    assert match.decides == (expect["kind"] in DECIDING and not match.needs_confirmation)
    assert match.raw_reply == row["reply"]
    assert match.grammar_version == GRAMMAR_VERSION


def test_the_corpus_is_large_and_covers_every_kind_of_reply() -> None:
    categories = {row["category"] for row in CORPUS}
    assert len(CORPUS) >= 150
    assert {
        "option_exact",
        "option_prefix",
        "command",
        "alias",
        "typo",
        "negation",
        "two_actions",
        "bare",
        "question",
        "emoji",
        "punctuation",
        "confirm",
        "skip",
        "nuclear",
        "critical",
        "destructive",
        "not_allowed",
        "comment",
    } <= categories
    assert any(row["reply"] != row["reply"].lower() for row in CORPUS)  # case
    assert {row["expect"]["kind"] for row in CORPUS} == DECIDING | {"ambiguous", "comment"}


DECIDING_ROWS = [row for row in CORPUS if row["expect"]["kind"] in DECIDING]


@pytest.mark.parametrize("row", DECIDING_ROWS, ids=corpus_id)
def test_given_a_deciding_reply_when_negated_then_it_decides_nothing(row: dict[str, Any]) -> None:
    for negated in (f"don't {row['reply']}", f"do not {row['reply']}", f"never {row['reply']}"):
        assert not parse_row(row, negated).decides, negated


@pytest.mark.parametrize("row", DECIDING_ROWS, ids=corpus_id)
def test_given_a_deciding_reply_when_asked_back_then_it_decides_nothing(
    row: dict[str, Any],
) -> None:
    # The question mark goes on the reply's own line, not into the quoted message around it.
    lines = str(row["reply"]).split("\n")
    own = next(i for i, line in enumerate(lines) if not line.startswith(">"))
    for ask in ("{}?", "{} ? 🤔", "¿{}？"):
        asked = "\n".join(ask.format(line) if i == own else line for i, line in enumerate(lines))
        assert not parse_row(row, asked).decides, asked


# --- the structured result ----------------------------------------------------------------------


def test_a_decision_carries_option_value_score_and_the_raw_reply() -> None:
    # Given a reply with a typo / When parsed
    match = parse_reply("aprove it", BACKUP_OPTIONS + DEFAULTS)
    # Then
    assert match.to_dict() == {
        "kind": "decision",
        "option": "approve",
        "value": "approve",
        "command": None,
        "matched_by": "fuzzy",
        "confidence": 0.923,
        "raw_reply": "aprove it",
        "grammar_version": "2",
        "needs_confirmation": False,
        "reason": None,
    }


def test_confidence_is_one_when_named_in_full_and_lower_for_prefix_and_fuzzy() -> None:
    assert parse_reply("approve", DEFAULTS).confidence == 1.0
    assert parse_reply("RESET_PHASE", (), pipeline=True).confidence == 1.0
    assert parse_reply("approve it now", DEFAULTS).confidence < 1.0
    assert parse_reply("app", DEFAULTS).confidence < parse_reply("appro", DEFAULTS).confidence < 1.0
    assert 0.8 <= parse_reply("procede", (), pipeline=True).confidence < 1.0
    assert parse_reply("thanks", DEFAULTS).confidence == 0.0


def test_a_command_carries_its_name_and_no_option() -> None:
    match = parse_reply("restart phase", DEFAULTS, pipeline=True)
    assert (match.kind, match.option, match.command, match.matched_by) == (
        "command",
        None,
        "RESET_PHASE",
        "alias",
    )
    assert match.to_dict()["value"] is None
    assert match.decides


def test_a_destructive_action_waits_for_an_explicit_confirm() -> None:
    # Given a nuclear reset named / Then it is understood but does not decide
    first = parse_reply("NUCLEAR_RESET", (), pipeline=True)
    assert (first.command, first.needs_confirmation, first.decides) == (
        "NUCLEAR_RESET",
        True,
        False,
    )
    # When confirmed / Then the confirmation decides (the caller matches it to the request)
    confirmed = parse_reply("CONFIRM nuclear reset", (), pipeline=True)
    assert (confirmed.kind, confirmed.command, confirmed.matched_by) == (
        "confirm",
        "NUCLEAR_RESET",
        "confirm",
    )
    assert confirmed.decides and not confirmed.needs_confirmation


def test_a_command_past_the_cap_is_recorded_but_refused() -> None:
    # Given the reset cap is reached (only PROCEED and STOP execute)
    match = parse_reply("reset phase", (), pipeline=True, allowed_commands=["proceed", "STOP"])
    # Then the command is recorded, nothing is decided
    assert (match.kind, match.command, match.reason, match.decides) == (
        "comment",
        "RESET_PHASE",
        "not_allowed",
        False,
    )


def test_an_unknown_allowed_command_is_refused() -> None:
    with pytest.raises(ValueError, match="RETRY"):
        parse_reply("proceed", (), pipeline=True, allowed_commands=["RETRY"])


def test_match_reply_reads_options_only() -> None:
    # Given no pipeline / Then §6 commands are words like any other
    assert match_reply(DEFAULTS, "proceed") == ReplyMatch("comment")
    assert match_reply(DEFAULTS, "approve") == parse_reply("approve", DEFAULTS)


def test_a_match_of_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="kind"):
        ReplyMatch("maybe")


def test_confirm_and_a_confirmed_command_decide_while_a_pending_one_does_not() -> None:
    assert ReplyMatch("confirm", None, "confirm", "NUCLEAR_RESET").decides
    assert ReplyMatch("command", None, "command", "STOP").decides
    assert not ReplyMatch("command", None, "command", "STOP", needs_confirmation=True).decides


# --- clarifications -----------------------------------------------------------------------------


def test_a_clarification_lists_the_valid_answers() -> None:
    match = parse_reply("approve or deny", DEFAULTS)
    text = clarification(DEFAULTS, match=match)
    assert text == (
        "That names more than one answer, so nothing was decided. "
        "Reply with exactly one of: approve, deny."
    )


def test_a_clarification_lists_offered_commands_too() -> None:
    match = parse_reply("reset", (), pipeline=True)
    text = clarification((), ["RESET_PHASE", "PROCEED", "STOP"], match=match)
    assert text.startswith("That does not say which one")
    assert text.endswith("one of: RESET_PHASE, PROCEED, STOP.")


def test_a_clarification_for_a_destructive_action_asks_for_the_confirm() -> None:
    match = parse_reply("nuclear reset", (), pipeline=True)
    text = clarification((), ["PROCEED", "STOP", "NUCLEAR_RESET"], match=match)
    assert 'reply "CONFIRM NUCLEAR_RESET"' in text


def test_a_clarification_for_a_refused_command_names_it() -> None:
    match = parse_reply("reset phase", (), pipeline=True, allowed_commands=["PROCEED", "STOP"])
    text = clarification((), ["PROCEED", "STOP"], match=match)
    assert text.startswith("RESET_PHASE cannot be used now, so nothing was decided.")


def test_a_clarification_without_a_match_still_lists_the_answers() -> None:
    assert clarification(DEFAULTS).endswith("one of: approve, deny.")
    assert clarification(()).endswith("one of: (none).")


# --- escalate parse-reply -----------------------------------------------------------------------


@pytest.fixture
def cli() -> typer.Typer:
    # Mounted the way api/cli.py mounts it, with a callback so "parse-reply" stays a subcommand.
    app = typer.Typer()

    @app.callback()
    def root() -> None:
        """A stand-in for the escalate app."""

    register(app)
    return app


def invoke(cli: typer.Typer, *args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(cli, ["parse-reply", *args])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def test_given_an_option_reply_when_parsed_by_the_cli_then_json_and_exit_0(
    cli: typer.Typer,
) -> None:
    code, out = invoke(cli, "--option", "Use backup", "--option", "Retry", "use", "backup", "now")
    assert code == 0
    assert out["kind"] == "decision"
    assert (out["option"], out["value"], out["matched_by"]) == (
        "Use backup",
        "Use backup",
        "prefix",
    )
    assert (out["raw_reply"], out["grammar_version"]) == ("use backup now", "2")


def test_given_no_options_then_the_cli_uses_the_default_approve_and_deny(cli: typer.Typer) -> None:
    code, out = invoke(cli, "deny")
    assert (code, out["option"]) == (0, "deny")


def test_given_a_pipeline_command_then_the_cli_prints_it(cli: typer.Typer) -> None:
    code, out = invoke(cli, "--pipeline", "RESTART PHASE")
    assert code == 0
    assert (out["kind"], out["command"], out["matched_by"]) == ("command", "RESET_PHASE", "alias")


def test_given_a_comment_or_an_ambiguous_reply_then_the_cli_exits_1(cli: typer.Typer) -> None:
    assert invoke(cli, "--pipeline", "don't", "stop")[0] == 1
    code, out = invoke(cli, "--pipeline", "reset")
    assert (code, out["kind"]) == (1, "ambiguous")


def test_given_a_critical_stop_then_the_cli_wants_a_confirm(cli: typer.Typer) -> None:
    code, out = invoke(cli, "--pipeline", "--critical", "stop")
    assert (code, out["needs_confirmation"]) == (1, True)
    code, out = invoke(cli, "--pipeline", "--critical", "confirm", "stop")
    assert (code, out["kind"]) == (0, "confirm")


def test_given_a_destructive_option_then_the_cli_wants_a_confirm(cli: typer.Typer) -> None:
    args = ("--option", "Drop table", "--option", "Keep", "--destructive", "drop table")
    assert invoke(cli, *args, "drop", "table")[0] == 1
    code, out = invoke(cli, *args, "confirm", "drop", "table")
    assert (code, out["kind"], out["option"]) == (0, "confirm", "Drop table")


def test_given_the_reset_cap_then_the_cli_refuses_a_reset(cli: typer.Typer) -> None:
    code, out = invoke(cli, "--pipeline", "--allow", "PROCEED", "--allow", "STOP", "reset phase")
    assert (code, out["kind"], out["command"], out["reason"]) == (
        1,
        "comment",
        "RESET_PHASE",
        "not_allowed",
    )


def test_given_bad_input_then_the_cli_exits_2(cli: typer.Typer) -> None:
    result = CliRunner().invoke(cli, ["parse-reply", "--option", "a", "--option", "A", "a"])
    assert result.exit_code == 2
    assert "two options share a label" in result.output
