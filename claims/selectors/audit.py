"""The audit log: claim transitions and operator actions, filtered, newest first."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from django.db.models import QuerySet

from claims.models import AuditEntry, ClaimEvent
from claims.selectors.engines.names import engine_condition
from claims.store.rows import EVENT_TRANSITION_FIELDS
from claims.utc_text import iso_utc

PAGE_SIZE = 50
# The operator records the audit page shows: the newest, a glance rather than a history.
OPERATOR_RECORDS_SHOWN = 25
CSV_MAX_ROWS = 100_000
CSV_COLUMNS = ("id", "at_ms", *EVENT_TRANSITION_FIELDS, "reason")
# The CSV's header: each millisecond column is followed by the same instant as ISO 8601
# UTC text (at_ms, at_utc), which a person or a spreadsheet reads without converting.
_MS_COLUMNS = frozenset(i for i, name in enumerate(CSV_COLUMNS) if name.endswith("_ms"))
CSV_HEADER = tuple(
    column
    for name in CSV_COLUMNS
    for column in ((name, name.removesuffix("_ms") + "_utc") if name.endswith("_ms") else (name,))
)


@dataclass(frozen=True)
class AuditFilters:
    kind: str | None = None
    engine: str | None = None
    actor: str | None = None
    prefix: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None
    operator_only: bool = False
    bulk_job: int | None = None  # the events one bulk job wrote (ClaimEvent.bulk_job_id)


@dataclass(frozen=True)
class AuditPage:
    items: list[ClaimEvent]
    next_cursor: int | None
    as_of_ms: int


def _events(filters: AuditFilters) -> QuerySet[ClaimEvent]:
    rows = ClaimEvent.objects.order_by("-id")
    if filters.kind:
        rows = rows.filter(kind=filters.kind)
    if filters.engine:
        rows = rows.filter(engine_condition("engine_id", filters.engine))  # id or name
    if filters.actor:
        rows = rows.filter(actor=filters.actor)
    if filters.operator_only:
        rows = rows.filter(actor__isnull=False)
    if filters.prefix:
        rows = rows.filter(workflow_id__startswith=filters.prefix)
    if filters.bulk_job is not None:
        rows = rows.filter(bulk_job_id=filters.bulk_job)  # (bulk_job_id, id) serves it
    if filters.since_ms is not None:
        rows = rows.filter(at_ms__gte=filters.since_ms)
    if filters.until_ms is not None:
        rows = rows.filter(at_ms__lt=filters.until_ms)
    return rows


def audit_page(
    filters: AuditFilters, *, now_ms: int, cursor: int | None = None, limit: int = PAGE_SIZE
) -> AuditPage:
    """One page of events older than ``cursor`` (an event id); one query."""
    rows = _events(filters)
    if cursor is not None:
        rows = rows.filter(id__lt=cursor)
    items = list(rows[: limit + 1])
    next_cursor = items[limit - 1].id if len(items) > limit else None
    return AuditPage(items[:limit], next_cursor, now_ms)


def _with_iso_utc(row: tuple[object, ...]) -> tuple[object, ...]:
    cells: list[object] = []
    for index, value in enumerate(row):
        cells.append(value)
        if index in _MS_COLUMNS:
            cells.append(iso_utc(value) if isinstance(value, int) else "")
    return tuple(cells)


def audit_rows(filters: AuditFilters) -> Iterator[tuple[object, ...]]:
    """Every matching event as a CSV row (``CSV_HEADER``), newest first, at most
    CSV_MAX_ROWS; streamed."""
    rows = _events(filters).values_list(*CSV_COLUMNS)[:CSV_MAX_ROWS]
    for row in rows.iterator(chunk_size=2_000):
        yield _with_iso_utc(row)


def operator_records(limit: int = OPERATOR_RECORDS_SHOWN) -> list[AuditEntry]:
    """The newest operator records (changes to saved queries, bulk jobs), newest first;
    one query on the primary key."""
    return list(AuditEntry.objects.order_by("-id")[:limit])
