"""Printing a query and parsing the text gives the same query back."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from claims.query import And, Comparison, Not, Or, format_query, parse

from .strategies import queries


@settings(max_examples=300, deadline=None)
@given(queries)
def test_parse_of_printed_query_is_the_query(query):
    assert parse(format_query(query)) == query


@settings(max_examples=100, deadline=None)
@given(queries)
def test_printed_text_is_canonical(query):
    text = format_query(query)

    assert format_query(parse(text)) == text


A = Comparison("epoch", "=", 1)
B = Comparison("epoch", "=", 2)
C = Comparison("epoch", "=", 3)


@pytest.mark.parametrize(
    ("query", "text"),
    [
        (And((A, B, C)), "epoch = 1 AND epoch = 2 AND epoch = 3"),
        (And((And((A, B)), C)), "(epoch = 1 AND epoch = 2) AND epoch = 3"),
        (Or((And((A, B)), C)), "epoch = 1 AND epoch = 2 OR epoch = 3"),
        (And((Or((A, B)), C)), "(epoch = 1 OR epoch = 2) AND epoch = 3"),
        (Or((Or((A, B)), C)), "(epoch = 1 OR epoch = 2) OR epoch = 3"),
        (Not(And((A, B))), "NOT (epoch = 1 AND epoch = 2)"),
        (Not(Not(A)), "NOT NOT epoch = 1"),
        (And((Not(A), B)), "NOT epoch = 1 AND epoch = 2"),
    ],
)
def test_parentheses_only_where_the_grammar_needs_them(query, text):
    assert format_query(query) == text
    assert parse(text) == query


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ('type="a" and epoch>=2', 'type = "a" AND epoch >= 2'),
        ("expires < NOW - 60m", "expires < now - 1h"),
        ("expires < now - 90s", "expires < now - 90s"),
        ("expires < now + 0d", "expires < now"),
        ("expires < now - 1500ms", "expires < now - 1500ms"),
        ('created > "2026-12-04T10:00:00+00:00"', 'created > "2026-12-04T10:00:00Z"'),
        ('created > "2026-12-04T10:00"', 'created > "2026-12-04T10:00:00Z"'),
        ('created > "2026-12-04T10:00:00.250Z"', 'created > "2026-12-04T10:00:00.250Z"'),
        ('id = "a\\u0007\\"\\\\\\n"', 'id = "a\\u0007\\"\\\\\\n"'),
        ("epoch not in (1, 2)", "epoch NOT IN (1, 2)"),
        ('type Starts_With "ord"', 'type STARTS_WITH "ord"'),
        ("EPOCH between 1 and 2", "epoch BETWEEN 1 AND 2"),
    ],
)
def test_printer_writes_the_canonical_form(text, canonical):
    assert format_query(parse(text)) == canonical
