"""Plain durations: the forms a design record may use, and the refusals."""

from __future__ import annotations

from datetime import timedelta

import pytest

from workflows.durations import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90s", timedelta(seconds=90)),
        ("15m", timedelta(minutes=15)),
        ("2h", timedelta(hours=2)),
        ("1d", timedelta(days=1)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("1h 30m", timedelta(hours=1, minutes=30)),
        ("1d2h3m4s", timedelta(days=1, hours=2, minutes=3, seconds=4)),
        ("1.5h", timedelta(minutes=90)),
        ("0.5s", timedelta(milliseconds=500)),
        ("  3s  ", timedelta(seconds=3)),
    ],
)
def test_given_a_plain_duration_when_parsed_then_it_is_that_timedelta(
    text: str, expected: timedelta
) -> None:
    # Given / When / Then
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("15x", "'15x' is not a duration"),
        ("", "'' is not a duration"),
        ("h", "'h' is not a duration"),
        ("1H", "'1H' is not a duration"),  # units are lowercase: "M" would read as months
        ("30m1h", "'30m1h' is not a duration"),  # largest unit first, each once
        ("1h1h", "'1h1h' is not a duration"),
        ("1e3s", "'1e3s' is not a duration"),
        ("90", "'90' has no unit"),  # seconds or minutes? refused rather than guessed
        ("1.5", "'1.5' has no unit"),
        ("0s", "'0s' is not a positive duration"),
        ("0h0m", "'0h0m' is not a positive duration"),
        ("-5m", "'-5m' is negative"),
    ],
)
def test_given_a_bad_duration_when_parsed_then_the_error_names_it_and_the_forms(
    text: str, words: str
) -> None:
    # Given a text that is not a positive plain duration
    # When it is parsed
    with pytest.raises(ValueError) as caught:
        parse_duration(text)
    # Then the message names the text and shows the accepted forms
    assert words in str(caught.value)
    assert "use e.g. 90s, 15m, 2h, 1d" in str(caught.value)


def test_given_a_non_string_when_parsed_then_it_is_refused() -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(90)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (timedelta(hours=4), "4h"),
        (timedelta(minutes=90), "1h30m"),
        (timedelta(days=1, seconds=4), "1d4s"),
        (timedelta(milliseconds=500), "0.5s"),
    ],
)
def test_given_a_timedelta_when_formatted_then_it_reads_back_the_same(
    value: timedelta, text: str
) -> None:
    # Given a timedelta / When formatted / Then the text is short and parses back
    assert format_duration(value) == text
    assert parse_duration(text) == value


def test_given_a_zero_timedelta_when_formatted_then_it_is_refused() -> None:
    with pytest.raises(ValueError, match="not a positive duration"):
        format_duration(timedelta(0))
