"""Pending re-drives: the queues page's list with its ageing totals, and the API's keyset
pages."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Min, Q

from claims.models import PendingRedrive
from claims.protocol.timing import ClaimTiming
from claims.selectors.engines.names import engine_condition

REDRIVE_LIMIT = 200


@dataclass(frozen=True)
class RedriveList:
    rows: list[PendingRedrive]
    total: int
    ageing: int
    oldest_ms: int | None
    ageing_before_ms: int
    as_of_ms: int


def redrive_list(*, now_ms: int, timing: ClaimTiming, engine: str | None = None) -> RedriveList:
    """Oldest first; a re-drive pending for longer than the TTL is ageing. Two queries."""
    rows = PendingRedrive.objects.all()
    if engine:
        rows = rows.filter(engine_id=engine)
    ageing_before = now_ms - timing.ttl_ms
    totals = rows.aggregate(
        total=Count("pk"),
        ageing=Count("pk", filter=Q(first_failed_at_ms__lt=ageing_before)),
        oldest=Min("first_failed_at_ms"),
    )
    return RedriveList(
        rows=list(rows.order_by("first_failed_at_ms", "id")[:REDRIVE_LIMIT]),
        total=totals["total"],
        ageing=totals["ageing"],
        oldest_ms=totals["oldest"],
        ageing_before_ms=ageing_before,
        as_of_ms=now_ms,
    )


@dataclass(frozen=True)
class RedrivePage:
    items: list[PendingRedrive]
    next_cursor: int | None


def redrive_page(
    *, engine: str | None = None, cursor: int | None = None, limit: int
) -> RedrivePage:
    """Pending re-drives in row order after ``cursor`` (a row id)."""
    rows = PendingRedrive.objects.order_by("id")
    if engine:
        rows = rows.filter(engine_condition("engine_id", engine))  # id or name
    if cursor is not None:
        rows = rows.filter(id__gt=cursor)
    found = list(rows[: limit + 1])
    items = found[:limit]
    return RedrivePage(items, items[-1].pk if len(found) > limit else None)
