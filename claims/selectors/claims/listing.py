"""The claim listing shared by the pages and the API: scopes, filters, derived state,
sorts and keyset pages (docs/design.md §7)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from django.db.models import F, QuerySet

from claims.models import Workflow, WorkflowClaim
from claims.protocol.records import ClaimRow
from claims.protocol.states import CLAIM_STATES, ClaimState, derive_claim_state
from claims.protocol.timing import ClaimTiming
from claims.query import Match, Query
from claims.selectors.engines.names import engine_condition
from claims.selectors.query.budget import query_bounded
from claims.selectors.query.claims import claim_query_condition
from claims.selectors.query.context import QueryContext
from claims.selectors.query.terms import text_match
from claims.store.rows import HOLDER_COLUMNS

from .conditions import filter_condition, state_condition
from .expiry_sort import expiry_values
from .last_holders import LastHolder, last_holders
from .search import search_bounded, with_substring
from .session_holders import JudgedSessions, judge_sessions, rows_with_sessions
from .sorting import (
    STATE_RANK,
    ClaimSort,
    Cursor,
    after,
    after_in_nulls,
    decode_cursor,
    encode_cursor,
)

MAX_PAGE = 200
# workflow_id, epoch, the five holder columns
_COLUMNS = ("workflow_id", "epoch", *HOLDER_COLUMNS)
# The states the state sort reads, with the instant, timing and sessions that judge them.
StateScope = tuple[tuple[ClaimState, ...], bool, int, ClaimTiming, JudgedSessions]


@dataclass(frozen=True)
class ClaimView:
    workflow_id: str
    epoch: int
    holder_engine_id: str | None
    holder_epoch: int | None
    expires_at_ms: int | None
    claimed_at_ms: int | None
    state: ClaimState
    expires_in_ms: int | None  # negative once past expiry
    stranded: bool = False  # ownerless while its workflow runs
    # For a row without a holder: the last engine that held it and when it let go.
    last_holder_engine_id: str | None = None
    last_held_at_ms: int | None = None


@dataclass(frozen=True)
class ClaimPage:
    items: list[ClaimView]
    next_cursor: str | None
    as_of_ms: int
    sort: str = "workflow_id"


def claim_view_of_row(
    row: ClaimRow,
    now_ms: int,
    timing: ClaimTiming,
    *,
    running: bool = False,
    last: LastHolder | None = None,
) -> ClaimView:
    """What an operator sees of one claim row at ``now_ms``."""
    holder = row.holder
    expires = row.expires_at_ms()  # a session holder's is its session's
    state = derive_claim_state(row, now_ms, timing)
    return ClaimView(
        workflow_id=row.workflow_id,
        epoch=row.epoch,
        holder_engine_id=None if holder is None else holder.engine_id,
        holder_epoch=None if holder is None else holder.epoch,
        expires_at_ms=expires,
        claimed_at_ms=None if holder is None else holder.claimed_at_ms,
        state=state,
        expires_in_ms=None if expires is None else expires - now_ms,
        stranded=state == "ownerless" and running,
        last_holder_engine_id=None if last is None else last.engine_id,
        last_held_at_ms=None if last is None else last.at_ms,
    )


def _states_in_scope(state: str | None) -> tuple[ClaimState, ...]:
    """The derived states a filter can return, so the state sort reads only those."""
    if state in CLAIM_STATES:
        return (cast(ClaimState, state),)
    return ("ownerless",) if state == "stranded" else CLAIM_STATES


def _state_values(
    rows: QuerySet[Any], sort: ClaimSort, cursor: Cursor | None, n: int, scope: StateScope
) -> list[tuple[Any, ...]]:
    """The state sort: state by state in STATE_RANK order (reversed when descending), each
    read in workflow-id order along the held or the primary-key index. A CASE over every
    row would sort the whole table per page; this is at most five short reads."""
    states, scoped, now_ms, timing, sessions = scope
    ranked = sorted(states, key=STATE_RANK.__getitem__, reverse=sort.descending)
    found: list[tuple[Any, ...]] = []
    at = None if cursor is None else cast(int, cursor.value)  # the cursor row's rank
    for state in ranked:
        rank = STATE_RANK[state]
        if at is not None and (rank > at if sort.descending else rank < at):
            continue  # before the cursor's state
        part = rows.filter(state_condition(state, now_ms, timing, sessions))
        if state == "ownerless" and scoped:  # the one state the scope narrows
            part = part.filter(filter_condition("stranded", now_ms, timing))
        if cursor is not None and rank == at:
            part = part.filter(after(sort, "workflow_id", cursor))
        ordered = part.order_by(*sort.order_by("workflow_id"))
        found += list(ordered.values_list(*_COLUMNS)[: n - len(found)])
        if len(found) >= n:
            break
    return found


def _keyset_values(
    rows: QuerySet[Any], sort: ClaimSort, cursor: Cursor | None, n: int
) -> list[tuple[Any, ...]]:
    """Up to ``n`` rows in ``sort`` after ``cursor``: rows with a value first, then (for a
    column that can be null) the rows without one, each read along its own index."""
    column = sort.column
    found: list[tuple[Any, ...]] = []
    if cursor is None or cursor.value is not None:
        having = rows.filter(**{f"{column}__isnull": False}) if sort.nullable else rows
        if cursor is not None:
            having = having.filter(after(sort, column, cursor))
        found = list(having.order_by(*sort.order_by(column)).values_list(*_COLUMNS)[:n])
    if sort.nullable and len(found) < n:
        missing = rows.filter(after_in_nulls(sort, cursor), **{f"{column}__isnull": True})
        ordered = missing.order_by(*sort.order_by("workflow_id"))
        found += list(ordered.values_list(*_COLUMNS)[: n - len(found)])
    return found


def _sort_value(sort: ClaimSort, view: ClaimView, raw: tuple[Any, ...]) -> Any:
    if sort.field == "state":
        return STATE_RANK[view.state]
    return raw[_COLUMNS.index(sort.column)] if sort.column in _COLUMNS else None


@search_bounded
@query_bounded
def claim_list(
    *,
    now_ms: int,
    timing: ClaimTiming,
    state: str | None = None,
    engine: str | None = None,
    prefix: str | None = None,
    search: str | None = None,
    sort: str | None = None,
    cursor: str | None = None,
    limit: int = 50,
    query: Query | None = None,
) -> ClaimPage:
    """One page of claims in ``sort`` order after ``cursor``: one query, two for a sort on a
    column that can be null, up to five for the state sort (one per state), two more
    when the page has ownerless rows (their last holders, which of them run), and one more
    when a holder on it names a session (the engine-lease mode: its session is its expiry),
    and one or two first for a state filter or the state sort (the sessions claims name).
    The expiry sort reads as a nullable column's while no claim names a session (the
    workflow-lease mode); once one does, a session holder's expiry is its session's, and a
    page also reads the session pairs the claims name and their sessions (two queries on
    PostgreSQL, one more per pair on SQLite), one query per session group whose expiry
    falls within the page, and the rows without an expiry once more: at most a few plus
    one per session, never growing with the claims (claims.selectors.claims.expiry_sort).
    ``state`` is a derived state or a scope (CLAIM_FILTERS); ``search`` a substring of the
    workflow id (case-sensitive). A bad sort or a cursor from another sort: InvalidInputError;
    a search no index can narrow, or one past its time budget: SearchTooBroadError
    (claims.selectors.claims.search). ``query`` (claims.query) narrows the rows as well, its
    workflow fields through one probe of the workflow's key per row."""
    limit = max(1, min(limit, MAX_PAGE))
    order = ClaimSort.parse(sort)
    position = None if not cursor else decode_cursor(order, cursor)
    rows = WorkflowClaim.objects.all()
    # The state sort applies a scope state by state: only its ownerless rows need the join.
    scoped = order.field == "state" and state in ("attention", "stranded")
    # Where a held row's state is tested, the sessions the claims name are judged first.
    judges_states = order.field == "state" or (state in CLAIM_STATES and state != "ownerless")
    sessions = judge_sessions(now_ms, timing) if judges_states else {}
    if state and not scoped:
        rows = rows.filter(filter_condition(state, now_ms, timing, sessions))
    if engine:
        rows = rows.filter(engine_condition("holder_engine_id", engine))  # id or name
    if prefix:
        # The same prefix as the query language's id STARTS_WITH: case-sensitive, as ids are.
        rows = rows.filter(text_match(F("workflow_id"), Match("id", "STARTS_WITH", prefix)))
    if search:
        rows = with_substring(rows, search)
    if query is not None:
        judged = sessions if judges_states else None  # read once for the page and the query
        rows = rows.filter(claim_query_condition(query, QueryContext(now_ms, timing, judged)))
    keys: list[Any] | None = None  # the rows' sort values, where the columns do not hold them
    if order.field == "state":
        scope = (_states_in_scope(state), scoped, now_ms, timing, sessions)
        values = _state_values(rows, order, position, limit + 1, scope)
    elif order.field == "expires_at" and state not in ("ownerless", "stranded"):
        # (Those filters hold no session holder: their expiry sort is any nullable sort's.)
        keyed = expiry_values(rows, order, position, limit + 1, _COLUMNS)
        keys, values = [key for key, _ in keyed], [row for _, row in keyed]
    else:
        values = _keyset_values(rows, order, position, limit + 1)
    released = [v[0] for v in values[:limit] if all(c is None for c in v[2:6])]
    lasts, running = last_holders(released) if released else ({}, set())
    items = []
    for row in rows_with_sessions(values[:limit]):
        last, runs = lasts.get(row.workflow_id), row.workflow_id in running
        items.append(claim_view_of_row(row, now_ms, timing, running=runs, last=last))
    next_cursor = None
    if len(values) > limit:
        last_view, last_raw = items[-1], values[limit - 1]
        value = keys[limit - 1] if keys is not None else _sort_value(order, last_view, last_raw)
        next_cursor = encode_cursor(order, value, last_view.workflow_id)
    return ClaimPage(items, next_cursor, now_ms, order.key)


def workflow_id_known(workflow_id: str) -> bool:
    """Whether ``workflow_id`` names a claim row or a workflow exactly (the jump box)."""
    return (
        WorkflowClaim.objects.filter(pk=workflow_id).exists()
        or Workflow.objects.filter(pk=workflow_id).exists()
    )
