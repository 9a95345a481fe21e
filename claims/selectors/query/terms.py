"""One term over one column, with the language's rule for absent values: a term on a
column that is NULL is false whatever its operator (``!=`` and ``NOT IN`` included), and
NOT is plain negation (claims/query/evaluate.py is the reference)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import connection
from django.db.models import Exists, F, Q, QuerySet
from django.db.models import Value as SqlValue
from django.db.models.expressions import Expression
from django.db.models.functions import StrIndex, Substr
from django.db.models.lookups import Exact, GreaterThan, IsNull

from claims.query import And, Between, Comparison, InList, Match, Not, Or, Query, Term

from .context import QueryContext

# A column (F) or an expression over one, such as a JSON key's text.
Operand = F | Expression
_ORDERINGS = {"<": "lt", "<=": "lte", ">": "gt", ">=": "gte"}

# A term's condition on the listing's rows, given the term and the context.
TermCondition = Callable[[Term, QueryContext], Q]


def combine(query: Query, ctx: QueryContext, term_condition: TermCondition) -> Q:
    """AND, OR and NOT over the conditions ``term_condition`` gives each term."""
    if isinstance(query, And | Or):
        parts = [combine(term, ctx, term_condition) for term in query.terms]
        joined = parts[0]
        for part in parts[1:]:
            joined = joined & part if isinstance(query, And) else joined | part
        return joined
    if isinstance(query, Not):
        return ~combine(query.term, ctx, term_condition)
    return term_condition(query, ctx)


def column_condition(column: str | Expression, term: Term, ctx: QueryContext) -> Q:
    """``term`` over one column (a name, or an expression such as a JSON key's text)."""
    value = F(column) if isinstance(column, str) else column
    present = _lookup(value, "isnull", False)
    if isinstance(term, Comparison):
        wanted = ctx.plain(term.value)
        if term.op == "=":
            return _lookup(value, "exact", wanted)
        if term.op == "!=":
            return present & ~_lookup(value, "exact", wanted)
        return _lookup(value, _ORDERINGS[term.op], wanted)
    if isinstance(term, InList):
        listed = [ctx.plain(item) for item in term.values]
        inside = _lookup(value, "in", listed)
        return present & ~inside if term.negated else inside
    if isinstance(term, Between):
        low, high = ctx.plain(term.low), ctx.plain(term.high)
        return _lookup(value, "gte", low) & _lookup(value, "lte", high)
    return text_match(value, term)


def text_match(value: Operand, term: Match) -> Q:
    """STARTS_WITH and CONTAINS, case-sensitive on every database (SQLite's LIKE folds
    ASCII case, so the comparison is of the text itself)."""
    text = SqlValue(term.text)
    if term.op == "STARTS_WITH":
        exact = _two_valued(value, Q(Exact(Substr(value, 1, len(term.text)), text)))
        return prefix_range(value, term.text) & exact if isinstance(value, F) else exact
    return _two_valued(value, Q(GreaterThan(StrIndex(value, text), 0)))


def prefix_range(column: F, prefix: str) -> Q:
    """A superset of the column's values that start with ``prefix`` that its index can
    read: LIKE 'prefix%' (PostgreSQL reads it from the pattern index Django gives a text
    key), and on SQLite, whose LIKE folds case and reads no index, the range from the
    prefix up to the prefix followed by the last code point (SQLite compares text byte by
    byte; no stored id holds U+10FFFF, a character the text rule refuses)."""
    like = Q(**{f"{column.name}__startswith": prefix})
    if connection.vendor != "sqlite":
        return like
    return like & Q(**{f"{column.name}__gte": prefix, f"{column.name}__lt": prefix + "\U0010ffff"})


def exists_in(rows: QuerySet[Any], condition: Q) -> Q:
    """The outer row has a related row (``rows``, already tied by OuterRef) that holds."""
    return Q(Exists(rows.filter(condition)))


def _lookup(value: Operand, lookup: str, wanted: object) -> Q:
    """``value <lookup> wanted``: a plain keyword filter for a column, so the index reads
    stay those of the pages; the lookup itself for an expression."""
    if isinstance(value, F):
        return Q(**{f"{value.name}__{lookup}": wanted})
    lookup_class = value.output_field.get_lookup(lookup)
    if lookup_class is None:  # every lookup used here is one every text and number has
        raise ValueError(f"no lookup {lookup!r} on {value!r}")
    return _two_valued(value, Q(lookup_class(value, wanted)))


def _two_valued(value: Operand, condition: Q) -> Q:
    """SQL's NULL makes a comparison unknown, and NOT of unknown is unknown: the row would
    drop out of ``NOT term`` too. Django guards its column lookups against that; for an
    expression the guard is written here, so a term on a missing value is plainly false."""
    return Q(IsNull(value, False)) & condition
