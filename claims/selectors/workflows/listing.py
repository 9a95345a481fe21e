"""The workflow listing shared by the workflows page and the API: filters, sorts, keyset pages,
and the count of workflows per status. Two queries whatever the number of workflows.

Sorts: ``updated`` and ``created`` newest first, ``id`` in id order; each walks an index
(claims.models.workflows), and the cursor carries the sort key of the page's last row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from django.db import connections
from django.db.models import Count, Q, QuerySet

from claims.models import WORKFLOW_ID_MAX_LENGTH, Workflow, WorkflowStatus
from claims.protocol.constants import COLUMN_INT_MAX, COLUMN_INT_MIN
from claims.protocol.errors import InvalidWorkflowIdError
from claims.protocol.ids import check_workflow_id
from claims.protocol.timing import ClaimTiming
from claims.query import Query
from claims.selectors.errors import BadCursorError
from claims.selectors.fleet.snapshot import snapshot_workflow_counts
from claims.selectors.query.budget import query_time_limit
from claims.selectors.query.context import QueryContext
from claims.selectors.query.workflows import workflow_query_condition

# A cursor is "<ms>:<workflow id>" or a workflow id: never longer than this.
CURSOR_MAX_LENGTH = WORKFLOW_ID_MAX_LENGTH + 20

MAX_PAGE = 200
# Under a time range each status is counted up to this many and shown as "10,000+" past
# it: an exact count would read every workflow in the range, a million on a busy fleet.
COUNT_CAP = 10_000
WorkflowSort = Literal["updated", "created", "id"]
WORKFLOW_SORTS: tuple[WorkflowSort, ...] = ("updated", "created", "id")
TimeField = Literal["updated", "created"]
TIME_FIELDS: tuple[TimeField, ...] = ("updated", "created")
_COLUMN = {"updated": "updated_at_ms", "created": "created_at_ms"}
_ROW_COLUMNS = (
    "workflow_id",
    "workflow_type",
    "status",
    "created_at_ms",
    "updated_at_ms",
    # Only the summary of a failure: a row must not drag its 16 KiB traceback along.
    "failure__type",
    "failure__message",
    "failure__step",
)


# The time of a cursor: ASCII digits, negative before 1970; 20 digits hold any 64-bit number.
_WHOLE_NUMBER = re.compile(r"-?[0-9]{1,20}")


@dataclass(frozen=True)
class WorkflowFilters:
    workflow_type: str | None = None
    status: str | None = None
    time_field: TimeField = "updated"
    since_ms: int | None = None  # inclusive
    until_ms: int | None = None  # exclusive
    sort: WorkflowSort = "updated"
    query: Query | None = None  # claims.query, under the other filters


@dataclass(frozen=True)
class WorkflowRow:
    workflow_id: str
    workflow_type: str
    status: str
    created_at_ms: int
    updated_at_ms: int
    failure_type: str | None
    failure_message: str | None
    failure_step: str | None


@dataclass(frozen=True)
class WorkflowPage:
    items: list[WorkflowRow]
    next_cursor: str | None
    status_counts: dict[str, int]  # every status, 0 included; under the type and time filters
    as_of_ms: int
    # The statuses counted only up to COUNT_CAP: at least that many (a time range).
    capped_statuses: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return sum(self.status_counts.values())

    @property
    def total_capped(self) -> bool:
        return bool(self.capped_statuses)


def _filtered(filters: WorkflowFilters, judged: QueryContext | None = None) -> QuerySet[Workflow]:
    """The type, time and query filters: what the status counts are counted under."""
    rows = Workflow.objects.all()
    if filters.query is not None:
        if judged is None:
            raise ValueError("a query is judged at an instant and a timing: pass them")
        rows = rows.filter(workflow_query_condition(filters.query, judged))
    if filters.workflow_type:
        rows = rows.filter(workflow_type=filters.workflow_type)
    column = _COLUMN[filters.time_field]
    if filters.since_ms is not None:
        rows = rows.filter(**{f"{column}__gte": filters.since_ms})
    if filters.until_ms is not None:
        rows = rows.filter(**{f"{column}__lt": filters.until_ms})
    return rows


def _after(sort: WorkflowSort, cursor: str) -> Q:
    """Rows after the cursor's row in the sort's order; a time cursor is "<ms>:<id>"."""
    if sort == "id":
        try:
            return Q(workflow_id__gt=check_workflow_id(cursor))
        except InvalidWorkflowIdError as error:
            raise BadCursorError(f"the cursor is damaged ({error})") from error
    at, sep, workflow_id = cursor.partition(":")
    if not sep or not _WHOLE_NUMBER.fullmatch(at) or not workflow_id:
        raise BadCursorError(
            f"a cursor of sort {sort!r} is <ms>:<workflow id>; got {cursor[:40]!r}"
        )
    # An edited cursor answers like any other bad input, never as a database overflow;
    # the time of any stored row fits, inside the time rule or not (a row another
    # program wrote), so the page takes back every cursor it wrote.
    at_ms = int(at)
    if not COLUMN_INT_MIN <= at_ms <= COLUMN_INT_MAX:
        raise BadCursorError(
            "the cursor is damaged (its time is out of range); start from the first page"
        )
    try:
        check_workflow_id(workflow_id)
    except InvalidWorkflowIdError as error:
        raise BadCursorError(
            f"the cursor is damaged ({error}); start from the first page"
        ) from error
    column = _COLUMN[sort]
    return Q(**{f"{column}__lt": at_ms}) | Q(**{column: at_ms, "workflow_id__lt": workflow_id})


def _cursor_of(sort: WorkflowSort, row: WorkflowRow) -> str:
    if sort == "id":
        return row.workflow_id
    at = row.updated_at_ms if sort == "updated" else row.created_at_ms
    return f"{at}:{row.workflow_id}"


def workflow_status_counts_where(
    filters: WorkflowFilters, *, cap: int | None = None, judged: QueryContext | None = None
) -> tuple[dict[str, int], tuple[str, ...]]:
    """Workflows per status under the type and time filters, and the statuses whose count
    stopped at ``cap``. Uncapped: one grouped query. Capped: one query of a capped count
    per status, each a range of the status index that stops at ``cap`` + 1 rows."""
    counts = dict.fromkeys(WorkflowStatus.values, 0)
    rows = _filtered(filters, judged).order_by()
    if cap is None:
        for status, n in rows.values_list("status").annotate(n=Count("pk")):
            counts[status] = n
        return counts, ()
    # One statement: per status, the count of a subquery that stops at cap + 1 rows.
    statuses = WorkflowStatus.values
    parts, params = [], []
    for index, status in enumerate(statuses):
        limited = rows.filter(status=status).values("pk")[: cap + 1]
        sql, sub_params = limited.query.get_compiler(using=limited.db).as_sql()
        parts.append(f"SELECT {index}, COUNT(*) FROM ({sql}) AS capped")
        params.extend(sub_params)
    with connections[rows.db].cursor() as cursor:
        cursor.execute(" UNION ALL ".join(parts), params)
        for index, n in cursor.fetchall():
            counts[statuses[index]] = n
    capped = tuple(s for s, n in counts.items() if n > cap)
    for status in capped:
        counts[status] = cap
    return counts, capped


def _status_counts(
    filters: WorkflowFilters, now_ms: int, timing: ClaimTiming | None, judged: QueryContext | None
) -> tuple[dict[str, int], tuple[str, ...]]:
    """The counts per status: with no time filter and no query, as beat's fresh snapshot
    counted them (of the type filtered on, if any; at most two renew intervals old, as the
    overview's; a million workflows take ~100 ms to count), else counted now, each up to
    COUNT_CAP."""
    if filters.query is not None:
        return workflow_status_counts_where(filters, cap=COUNT_CAP, judged=judged)
    if filters.since_ms is None and filters.until_ms is None:
        if timing is not None:
            counted = snapshot_workflow_counts(
                now_ms=now_ms, timing=timing, workflow_type=filters.workflow_type or None
            )
            if counted is not None:
                return {status: counted.get(status, 0) for status in WorkflowStatus.values}, ()
        return workflow_status_counts_where(filters)
    return workflow_status_counts_where(filters, cap=COUNT_CAP)


def workflow_list(
    filters: WorkflowFilters,
    *,
    now_ms: int,
    cursor: str | None = None,
    limit: int = 50,
    timing: ClaimTiming | None = None,
) -> WorkflowPage:
    """One page after ``cursor`` in the sort's order, with the counts per status (from
    beat's fresh snapshot where they can be, given the ``timing`` that judges freshness).
    A query (``filters.query``) needs the ``timing`` its claim states are judged by."""
    limit = max(1, min(limit, MAX_PAGE))
    judged = None
    if filters.query is not None:
        if timing is None:
            raise ValueError("a query's claim states are judged by a timing: pass it")
        judged = QueryContext(now_ms, timing)
    with query_time_limit(filters.query):
        rows = _filtered(filters, judged)
        if filters.status:
            rows = rows.filter(status=filters.status)
        if cursor:
            rows = rows.filter(_after(filters.sort, cursor))
        if filters.sort == "id":
            rows = rows.order_by("workflow_id")
        else:
            column = _COLUMN[filters.sort]
            rows = rows.order_by(f"-{column}", "-workflow_id")
        values = list(rows.values_list(*_ROW_COLUMNS)[: limit + 1])
        items = [WorkflowRow(*row) for row in values[:limit]]
        next_cursor = _cursor_of(filters.sort, items[-1]) if len(values) > limit else None
        counts, capped = _status_counts(filters, now_ms, timing, judged)
    return WorkflowPage(items, next_cursor, counts, now_ms, capped)
