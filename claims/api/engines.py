"""The engines of the fleet, and the claims they failed to drive (pending re-drives)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query

from claims.fleet_clock import fleet_now
from claims.models import EngineStatus
from claims.selectors.listings import engine_list, redrive_list

from .router import router
from .schemas import (
    READ_ERRORS,
    EngineListOut,
    EngineOut,
    RedriveFilterIn,
    RedriveOut,
    RedrivePageOut,
    utc,
)

# These routes lived in claims/api/fleet.py, and OpenAPI names an operation after its module:
# keep those names, which generated clients name their methods after.
LEGACY_PREFIX = "claims_api_fleet_"


@router.get(
    "/engines",
    response={200: EngineListOut, **READ_ERRORS},
    operation_id=f"{LEGACY_PREFIX}engines_list",
)
def engines_list(request: HttpRequest, status: EngineStatus | None = None) -> EngineListOut:
    """Every engine with its heartbeat age, clock skew, held claims and last pass summaries."""
    now_ms, _ = fleet_now()
    return EngineListOut(
        items=[EngineOut.of(engine, now_ms=now_ms) for engine in engine_list(status=status)],
        as_of_ms=now_ms,
        as_of=utc(now_ms),
    )


@router.get(
    "/redrives",
    response={200: RedrivePageOut, **READ_ERRORS},
    operation_id=f"{LEGACY_PREFIX}redrives_list",
)
def redrives_list(request: HttpRequest, filters: Query[RedriveFilterIn]) -> RedrivePageOut:
    """Claims an engine holds but failed to drive, oldest first; follow `next_cursor` for more."""
    now_ms, _ = fleet_now()
    page = redrive_list(engine=filters.engine, cursor=filters.cursor, limit=filters.limit)
    return RedrivePageOut(
        items=[RedriveOut.of(row) for row in page.items],
        next_cursor=page.next_cursor,
        as_of_ms=now_ms,
        as_of=utc(now_ms),
    )
