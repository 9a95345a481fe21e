"""Hostile or random input is refused with QueryError, cheaply, and never with another error."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claims.query import (
    MAX_DEPTH,
    MAX_IN_VALUES,
    MAX_LENGTH,
    MAX_TERMS,
    Comparison,
    QueryError,
    format_query,
    parse,
)

TERM = "epoch = 1"


def refusal(text: str) -> QueryError:
    with pytest.raises(QueryError) as raised:
        parse(text)
    return raised.value


def test_text_longer_than_the_limit_is_refused_before_parsing():
    text = 'id = "' + "a" * MAX_LENGTH + '"'

    error = refusal(text)

    assert error.position == MAX_LENGTH
    assert error.message == f"a query is at most {MAX_LENGTH} characters; this one has {len(text)}"


def test_text_at_the_limit_is_read():
    text = 'id = "' + "a" * (MAX_LENGTH - 7) + '"'

    assert len(text) == MAX_LENGTH
    assert parse(text) is not None


def _nested(depth: int) -> str:
    """``(epoch = 1 OR (epoch = 1 OR (...)))``: ``depth`` ORs, each inside the last."""
    text = TERM
    for _ in range(depth - 1):
        text = f"{TERM} OR ({text})"
    return f"{TERM} OR ({text})" if depth > 0 else text


@pytest.mark.parametrize(
    ("text", "position"),
    [
        ("NOT " * (MAX_DEPTH + 1) + TERM, 4 * MAX_DEPTH),
        ("NOT " * 450 + TERM, 4 * MAX_DEPTH),
        ("NOT (" * 300 + TERM + ")" * 300, 5 * MAX_DEPTH),
        (_nested(MAX_DEPTH + 1), MAX_DEPTH * len(f"{TERM} OR (")),
    ],
)
def test_deep_nesting_is_refused(text, position):
    error = refusal(text)

    assert error.message == f"the query nests AND, OR, NOT and parentheses deeper than {MAX_DEPTH}"
    assert error.position == position


def test_nesting_at_the_limit_is_read():
    assert parse("NOT " * MAX_DEPTH + TERM) is not None
    assert parse(_nested(MAX_DEPTH)) is not None


def test_parentheses_alone_do_not_count_as_nesting():
    # They add no node: the parser's own stack holds them, so they cost no recursion.
    assert parse("(" * 900 + TERM + ")" * 900) == parse(TERM)


def test_too_many_terms_are_refused():
    text = " OR ".join([TERM] * (MAX_TERMS + 1))

    error = refusal(text)

    assert error.message == f"a query has at most {MAX_TERMS} terms"
    assert error.position == len(" OR ".join([TERM] * MAX_TERMS)) + len(" OR ")


def test_too_long_an_in_list_is_refused():
    error = refusal("epoch IN (" + ",".join(["1"] * (MAX_IN_VALUES + 1)) + ")")

    assert error.message == f"an IN list has at most {MAX_IN_VALUES} values"
    assert error.position == 0


@pytest.mark.parametrize(
    ("text", "position", "code"),
    [
        ('type = "a\x00"', 9, "U+0000"),
        ("\x1bepoch = 1", 0, "U+001B"),
        ('type = "\x7f"', 8, "U+007F"),
        ('type = "\x85"', 8, "U+0085"),
    ],
)
def test_control_characters_are_refused(text, position, code):
    error = refusal(text)

    assert error.position == position
    assert code in error.message


@pytest.mark.parametrize("char", ["\u2028", "\ufeff", "\u00a0", "\u0661", "\U0001f600"])
def test_unusual_characters_are_text_inside_quotes(char):
    assert parse(f'type = "{char}"') == Comparison("type", "=", char)


@pytest.mark.parametrize(
    ("text", "position"),
    [
        ("epoch\u00a0= 1", 5),
        ("\uff45\uff50\uff4f\uff43\uff48 = 1", 0),  # fullwidth "epoch"
        ("epoch = \u0661", 8),  # an Arabic-Indic digit one
        ("type = \u201cx\u201d", 7),  # typographic quotes
    ],
)
def test_unusual_characters_outside_quotes_are_refused(text, position):
    assert refusal(text).position == position


def _outcome(text: str):
    """The query ``text`` says, or the QueryError it raises; any other error propagates."""
    try:
        return parse(text)
    except QueryError as error:
        return error


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=200))
def test_random_text_only_ever_raises_query_error(text):
    outcome = _outcome(text)

    if isinstance(outcome, QueryError):
        assert 0 <= outcome.position <= len(text)


_PIECES = [
    "epoch",
    "type",
    "state",
    "expires",
    "frob",
    "AND",
    "OR",
    "NOT",
    "IN",
    "BETWEEN",
    "STARTS_WITH",
    "CONTAINS",
    "now",
    "-",
    "+",
    "10m",
    "5",
    "99999999999999999999",
    "=",
    "!=",
    "<",
    ">=",
    "(",
    ")",
    ",",
    '"live"',
    '"x"',
    '"\\u0000"',
    '"\\q',
    '"2026-12-04T10:00:00Z"',
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=14))
def test_random_token_soup_parses_or_raises_query_error(pieces):
    text = " ".join(pieces)
    outcome = _outcome(text)

    if isinstance(outcome, QueryError):
        assert 0 <= outcome.position <= len(text)
    else:
        assert parse(format_query(outcome)) == outcome
