"""Fleet listings for the API: engines, re-drives, the reclaim cursor. One query each."""

from __future__ import annotations

from dataclasses import dataclass

from claims.models import Engine, PendingRedrive, ReclaimCursor
from claims.selectors.engine_sessions import with_sessions

from .engine_names import engine_condition

DEFAULT_CURSOR = "default"


@dataclass(frozen=True)
class RedrivePage:
    items: list[PendingRedrive]
    next_cursor: int | None


def engine_list(*, status: str | None = None) -> list[Engine]:
    """Every engine (a fleet is tens, not thousands), in id order, with its session."""
    engines = with_sessions(Engine.objects.order_by("engine_id"))
    if status:
        engines = engines.filter(status=status)
    return list(engines)


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
