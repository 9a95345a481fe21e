"""What the grammar reads, into which query, and what it refuses, where and why."""

from __future__ import annotations

import pytest

from claims.query import (
    AbsoluteTime,
    And,
    Between,
    Comparison,
    InList,
    Match,
    Not,
    Or,
    QueryError,
    RelativeTime,
    parse,
)

TEN_MINUTES_AGO = RelativeTime(-600_000)
DEC_4_10H = AbsoluteTime(1_796_378_400_000)


@pytest.mark.parametrize(
    ("text", "query"),
    [
        (
            'type = "order" AND engine = "engine3@host-a" AND state = "expired" '
            "AND expires > now - 10m",
            And(
                (
                    Comparison("type", "=", "order"),
                    Comparison("engine", "=", "engine3@host-a"),
                    Comparison("state", "=", "expired"),
                    Comparison("expires", ">", TEN_MINUTES_AGO),
                )
            ),
        ),
        ("epoch != 3", Comparison("epoch", "!=", 3)),
        ("epoch<3", Comparison("epoch", "<", 3)),
        ("epoch <= 3", Comparison("epoch", "<=", 3)),
        ("epoch >= 3", Comparison("epoch", ">=", 3)),
        ('status IN ("running", "suspended")', InList("status", ("running", "suspended"))),
        ("epoch NOT IN (1)", InList("epoch", (1,), negated=True)),
        ("NOT epoch IN (1)", Not(InList("epoch", (1,)))),
        ("epoch BETWEEN 1 AND 5", Between("epoch", 1, 5)),
        ('id STARTS_WITH "wf-"', Match("id", "STARTS_WITH", "wf-")),
        ('failure CONTAINS "Timeout"', Match("failure", "CONTAINS", "Timeout")),
        ('created >= "2026-12-04T10:00:00Z"', Comparison("created", ">=", DEC_4_10H)),
        ("updated < now", Comparison("updated", "<", RelativeTime(0))),
        ("claimed > now + 1h", Comparison("claimed", ">", RelativeTime(3_600_000))),
        ("claimed > now-2d", Comparison("claimed", ">", RelativeTime(-172_800_000))),
        ("claimed > now - 5s", Comparison("claimed", ">", RelativeTime(-5_000))),
        ("claimed > now - 250ms", Comparison("claimed", ">", RelativeTime(-250))),
        ('type = "a\\"b\\\\c\\n\\t\\r\\u00e9"', Comparison("type", "=", 'a"b\\c\n\t\ré')),
        ('type = ""', Comparison("type", "=", "")),
        ("\n epoch\t=\r\n1 ", Comparison("epoch", "=", 1)),
        # AND binds tighter than OR; NOT tighter than AND; parentheses group.
        (
            "epoch = 1 OR epoch = 2 AND epoch = 3",
            Or(
                (
                    Comparison("epoch", "=", 1),
                    And((Comparison("epoch", "=", 2), Comparison("epoch", "=", 3))),
                )
            ),
        ),
        (
            "(epoch = 1 OR epoch = 2) AND NOT epoch = 3",
            And(
                (
                    Or((Comparison("epoch", "=", 1), Comparison("epoch", "=", 2))),
                    Not(Comparison("epoch", "=", 3)),
                )
            ),
        ),
        ("((epoch = 1))", Comparison("epoch", "=", 1)),
        # BETWEEN's AND is its own; the next AND joins terms.
        (
            "epoch BETWEEN 1 AND 2 AND epoch = 1",
            And((Between("epoch", 1, 2), Comparison("epoch", "=", 1))),
        ),
        # Keywords and field names are case-insensitive.
        (
            'Type = "x" and not EPOCH In (1) oR id starts_with "a"',
            Or(
                (
                    And((Comparison("type", "=", "x"), Not(InList("epoch", (1,))))),
                    Match("id", "STARTS_WITH", "a"),
                )
            ),
        ),
        ("expires > NOW - 10m", Comparison("expires", ">", TEN_MINUTES_AGO)),
    ],
)
def test_accepted(text, query):
    assert parse(text) == query


@pytest.mark.parametrize(
    ("text", "position", "words"),
    [
        ("", 0, "the query is empty"),
        ("   ", 0, "the query is empty"),
        ("type", 4, "ends too early: expected an operator"),
        ("type =", 6, "ends too early: expected a value"),
        ("type = order", 7, "found 'order' (text values are double-quoted: \"order\")"),
        ('type = "a" AMD epoch = 1', 11, "expected AND, OR or the end of the query, found 'AMD'"),
        ('type = "a" epoch = 1', 11, "found 'epoch'"),
        ('(type = "a"', 11, "ends too early: expected )"),
        ('type = "a")', 10, "found ')'"),
        ("epoch IN (1, 2", 14, "expected , or )"),
        ("epoch IN ()", 10, "expected a value"),
        ("epoch IN 1", 9, "expected ("),
        ("epoch NOT 1", 10, "expected IN"),
        ("epoch BETWEEN 1 2", 16, "expected AND"),
        ('type = "abc', 7, "this text never ends"),
        ('type = "a\nb"', 7, "this text never ends"),
        ("type @ 1", 5, "unexpected character '@': expected an operator"),
        ("= 1", 0, "expected a field name, NOT or ("),
        ("AND epoch = 1", 0, "expected a field name, NOT or ("),
        ("epoch = 1 AND", 13, "ends too early: expected a field name, NOT or ("),
        ("expires > now - 10 m", 16, "expected a duration like 10m"),
        ("expires > now - 10w", 16, "expected a duration like 10m"),
        ("expires > now 10m", 14, "expected + or -"),
        ('type = "\\q"', 8, "unknown escape \\q"),
        ('type = "\\u12"', 8, "unknown escape \\u"),
        ('type = "\\ud800"', 8, "unknown escape \\ud800"),
        ("epoch = -1", 8, "expected a value"),
        ('type = "ab\\u0000"', 10, "text cannot hold U+0000"),
    ],
)
def test_refused_with_position_and_what_was_expected(text, position, words):
    with pytest.raises(QueryError) as raised:
        parse(text)

    assert raised.value.position == position
    assert words in raised.value.message
    assert str(raised.value) == f"{raised.value.message} (at position {position})"
