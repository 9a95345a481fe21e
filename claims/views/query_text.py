"""The list pages' query box: the query in the URL (``?query=``), read or refused with what
is wrong and where, and the filters an operator picked in the dropdowns written as query
text, so a view made of clicks can be edited and shared as one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.http import QueryDict

from claims.query import (
    AbsoluteTime,
    And,
    Comparison,
    Match,
    Query,
    QueryError,
    format_query,
    parse,
)
from claims.selectors.workflows.listing import WorkflowFilters


@dataclass(frozen=True)
class QueryInput:
    text: str  # as typed; "" for none
    query: Query | None
    error: QueryError | None

    @property
    def caret(self) -> str:
        """Spaces up to the error's position, for a caret under the text."""
        return "" if self.error is None else " " * self.error.position


def query_input(params: QueryDict) -> QueryInput:
    """The ``query`` parameter, parsed; a query that cannot be read keeps its error."""
    text = params.get("query", "")
    if not text.strip():
        return QueryInput("", None, None)
    try:
        return QueryInput(text, parse(text), None)
    except QueryError as error:
        return QueryInput(text, None, error)


def claim_filters_as_query(
    *, state: str | None, engine: str | None, prefix: str | None, search: str | None
) -> Query | None:
    """The claims page's dropdowns and boxes as a query (``state`` as the page reads it:
    "all" selects every row, so it adds no term)."""
    terms: list[Query] = []
    if state and state != "all":
        terms.append(Comparison("state", "=", state))
    if engine:
        terms.append(Comparison("engine", "=", engine))
    if prefix:
        terms.append(Match("id", "STARTS_WITH", prefix))
    if search:
        terms.append(Match("id", "CONTAINS", search))
    return _all_of(terms)


def workflow_filters_as_query(filters: WorkflowFilters) -> Query | None:
    """The workflows page's type, status and time range as a query."""
    terms: list[Query] = []
    if filters.workflow_type:
        terms.append(Comparison("type", "=", filters.workflow_type))
    if filters.status:
        terms.append(Comparison("status", "=", filters.status))
    if filters.since_ms is not None:
        terms.append(Comparison(filters.time_field, ">=", AbsoluteTime(filters.since_ms)))
    if filters.until_ms is not None:
        terms.append(Comparison(filters.time_field, "<", AbsoluteTime(filters.until_ms)))
    return _all_of(terms)


def editable_text(picked: Query | None, typed: Query | None) -> str:
    """What the dropdowns picked and the query typed, as one query's text ("" for none)."""
    query = _all_of([part for part in (picked, typed) if part is not None])
    return "" if query is None else format_query(query)


def query_box(
    typed: QueryInput, picked: Query | None, keeps: list[tuple[str, str]]
) -> dict[str, Any]:
    """The query box's context: the query typed, the parameters its form carries along
    (``keeps``: the sort), and the link that writes the picked filters and the typed query
    as one query ("" when nothing is picked, or while the typed query must be mended)."""
    link = ""
    if picked is not None and typed.error is None:
        link = urlencode([("query", editable_text(picked, typed.query)), *keeps])
    return {"query": typed, "query_keeps": keeps, "as_query": link}


def _all_of(terms: list[Query]) -> Query | None:
    if not terms:
        return None
    return terms[0] if len(terms) == 1 else And(tuple(terms))
