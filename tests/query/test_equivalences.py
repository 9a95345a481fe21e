"""IN, NOT IN and BETWEEN mean what their spelled-out forms mean, absent values included:
the identities a compiler for the database may rely on."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from claims.query import And, Between, Comparison, InList, Not, Or, RelativeTime, matches

from .strategies import NOW_MS, ORDERED, betweens, in_lists, queries, rows


def _any_of(terms):
    return terms[0] if len(terms) == 1 else Or(tuple(terms))


def _all_of(terms):
    return terms[0] if len(terms) == 1 else And(tuple(terms))


@settings(max_examples=300, deadline=None)
@given(in_lists(), rows)
def test_in_is_one_equality_holding_and_not_in_is_none(term, row):
    if term.negated:
        spelled = _all_of([Comparison(term.field, "!=", value) for value in term.values])
    else:
        spelled = _any_of([Comparison(term.field, "=", value) for value in term.values])

    assert matches(term, row, NOW_MS) == matches(spelled, row, NOW_MS)


@settings(max_examples=300, deadline=None)
@given(betweens(), rows)
def test_between_is_both_bounds(term, row):
    spelled = And((Comparison(term.field, ">=", term.low), Comparison(term.field, "<=", term.high)))

    assert matches(term, row, NOW_MS) == matches(spelled, row, NOW_MS)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(ORDERED), rows)
def test_a_term_on_an_absent_value_is_false_and_its_negation_true(field, row):
    row = {**row, field: None}
    term = Comparison(field, "!=", 1 if field == "epoch" else RelativeTime(0))

    assert not matches(term, row, NOW_MS)
    assert matches(Not(term), row, NOW_MS)


@settings(max_examples=200, deadline=None)
@given(queries, rows)
def test_not_is_plain_negation(query, row):
    assert matches(Not(query), row, NOW_MS) is not matches(query, row, NOW_MS)


def test_between_covers_its_bounds():
    row = {"epoch": 3}

    assert matches(Between("epoch", 3, 3), row, NOW_MS)
    assert not matches(Between("epoch", 4, 2), row, NOW_MS)


def test_not_in_of_an_absent_engine_is_false():
    assert not matches(InList("engine", ("x",), negated=True), {"engine_id": None}, NOW_MS)
