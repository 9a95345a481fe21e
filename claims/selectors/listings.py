"""Fleet listings for the API: re-drives, the reclaim cursor. One query each."""

from __future__ import annotations

from dataclasses import dataclass

from claims.models import PendingRedrive, ReclaimCursor
from claims.selectors.engines.names import engine_condition

DEFAULT_CURSOR = "default"


@dataclass(frozen=True)
class RedrivePage:
    items: list[PendingRedrive]
    next_cursor: int | None


def redrive_list(
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


def reclaim_cursor_get(name: str = DEFAULT_CURSOR) -> ReclaimCursor:
    """The scan cursor; an unsaved one at the start of the keyspace before the first pass."""
    return ReclaimCursor.objects.filter(name=name).first() or ReclaimCursor(name=name)
