"""Hypothesis strategies for valid queries, field by field."""

from __future__ import annotations

from hypothesis import strategies as st

from claims.protocol.times import MAX_TIME_MS, MIN_TIME_MS
from claims.query import (
    FIELDS,
    STATES,
    WORKFLOW_STATUSES,
    AbsoluteTime,
    And,
    Between,
    Comparison,
    InList,
    Match,
    Not,
    Or,
    Query,
    RelativeTime,
)
from claims.query.fields import MAX_NUMBER
from claims.query.times import MAX_OFFSET_MS

ORDERED = [name for name, spec in FIELDS.items() if spec.kind in ("number", "time")]
TEXTUAL = [name for name, spec in FIELDS.items() if spec.kind == "text"]

# Any text but U+0000, which no stored value holds and the parser refuses.
# The first choices of each are the values rows hold (below), so that terms often meet them.
ROW_TEXTS = ["", "a", "ab", "order", "engine3@host-a"]
NOW_MS = 1_796_378_400_000
HOUR_MS = 3_600_000
texts = st.one_of(
    st.sampled_from(ROW_TEXTS), st.text(st.characters(exclude_characters="\x00"), max_size=12)
)
times = st.one_of(
    st.builds(AbsoluteTime, st.integers(NOW_MS - HOUR_MS, NOW_MS + HOUR_MS)),
    st.builds(RelativeTime, st.integers(-HOUR_MS, HOUR_MS)),
    st.builds(AbsoluteTime, st.integers(MIN_TIME_MS, MAX_TIME_MS)),
    st.builds(RelativeTime, st.integers(-MAX_OFFSET_MS, MAX_OFFSET_MS)),
)
_VALUES = {
    "text": texts,
    "number": st.one_of(st.integers(0, 5), st.integers(0, MAX_NUMBER)),
    "time": times,
    "status": st.sampled_from(WORKFLOW_STATUSES),
    "state": st.sampled_from(STATES),
}


def values_of(field: str) -> st.SearchStrategy:
    return _VALUES[FIELDS[field].kind]


@st.composite
def comparisons(draw: st.DrawFn) -> Comparison:
    field = draw(st.sampled_from(list(FIELDS)))
    ops = ["=", "!=", "<", "<=", ">", ">="] if field in ORDERED else ["=", "!="]
    return Comparison(field, draw(st.sampled_from(ops)), draw(values_of(field)))


@st.composite
def in_lists(draw: st.DrawFn) -> InList:
    field = draw(st.sampled_from(list(FIELDS)))
    values = draw(st.lists(values_of(field), min_size=1, max_size=4))
    return InList(field, tuple(values), negated=draw(st.booleans()))


@st.composite
def betweens(draw: st.DrawFn) -> Between:
    field = draw(st.sampled_from(ORDERED))
    return Between(field, draw(values_of(field)), draw(values_of(field)))


matches_ = st.builds(
    Match,
    st.sampled_from(TEXTUAL),
    st.sampled_from(["STARTS_WITH", "CONTAINS"]),
    texts,
)
terms = st.one_of(comparisons(), in_lists(), betweens(), matches_)


def _combine(children: st.SearchStrategy[Query]) -> st.SearchStrategy[Query]:
    several = st.lists(children, min_size=2, max_size=3).map(tuple)
    return st.one_of(several.map(And), several.map(Or), children.map(Not))


queries: st.SearchStrategy[Query] = st.recursive(terms, _combine, max_leaves=8)


def _maybe(values: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(st.none(), values)


# Rows whose values often meet the queries' values: few texts, numbers and times near now.
_row_texts = st.sampled_from(ROW_TEXTS)
_row_times = st.integers(NOW_MS - HOUR_MS, NOW_MS + HOUR_MS)
rows = st.fixed_dictionaries(
    {
        "id": _maybe(_row_texts),
        "type": _maybe(_row_texts),
        "status": _maybe(st.sampled_from(WORKFLOW_STATUSES)),
        "state": st.frozensets(st.sampled_from(STATES), max_size=3),
        "engine_id": _maybe(_row_texts),
        "engine_name": _maybe(_row_texts),
        "epoch": _maybe(st.integers(0, 5)),
        "expires": _maybe(_row_times),
        "claimed": _maybe(_row_times),
        "created": _maybe(_row_times),
        "updated": _maybe(_row_times),
        "failure": _maybe(_row_texts),
    }
)
