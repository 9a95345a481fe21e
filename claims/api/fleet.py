"""Fleet state: engines, the reclaim scan cursor, pending re-drives."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query

from claims.clock import fleet_clock
from claims.models import EngineStatus
from claims.selectors.listings import engine_list, reclaim_cursor_get, redrive_list

from .router import router
from .schemas import (
    READ_ERRORS,
    EngineListOut,
    EngineOut,
    ReclaimCursorOut,
    RedriveFilterIn,
    RedriveOut,
    RedrivePageOut,
    utc,
)


@router.get("/engines", response={200: EngineListOut, **READ_ERRORS})
def engines_list(request: HttpRequest, status: EngineStatus | None = None) -> EngineListOut:
    """Every engine with its heartbeat age, clock skew, held claims and last pass summaries."""
    now_ms = fleet_clock()()
    return EngineListOut(
        items=[EngineOut.of(engine, now_ms=now_ms) for engine in engine_list(status=status)],
        as_of_ms=now_ms,
        as_of=utc(now_ms),
    )


@router.get("/reclaim/cursor", response={200: ReclaimCursorOut, **READ_ERRORS})
def reclaim_cursor_read(request: HttpRequest) -> ReclaimCursorOut:
    """Where the fleet's bounded scan of the workflow table resumes, and how often it wrapped."""
    return ReclaimCursorOut.of(reclaim_cursor_get(), now_ms=fleet_clock()())


@router.get("/redrives", response={200: RedrivePageOut, **READ_ERRORS})
def redrives_list(request: HttpRequest, filters: Query[RedriveFilterIn]) -> RedrivePageOut:
    """Claims an engine holds but failed to drive, oldest first; follow `next_cursor` for more."""
    now_ms = fleet_clock()()
    page = redrive_list(engine=filters.engine, cursor=filters.cursor, limit=filters.limit)
    return RedrivePageOut(
        items=[RedriveOut.of(row) for row in page.items],
        next_cursor=page.next_cursor,
        as_of_ms=now_ms,
        as_of=utc(now_ms),
    )
