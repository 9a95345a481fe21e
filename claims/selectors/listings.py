"""Fleet listings for the API: re-drives. One query each."""

from __future__ import annotations

from dataclasses import dataclass

from claims.models import PendingRedrive
from claims.selectors.engines.names import engine_condition


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
