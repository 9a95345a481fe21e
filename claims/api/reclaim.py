"""The reclaim scan: where the fleet's bounded walk of the workflow table stands."""

from __future__ import annotations

from django.http import HttpRequest

from claims.fleet_clock import fleet_now
from claims.selectors.fleet.reclaim import reclaim_cursor_get

from .router import router
from .schemas import READ_ERRORS, ReclaimCursorOut

# This route lived in claims/api/fleet.py, and OpenAPI names an operation after its module:
# keep those names, which generated clients name their methods after.
LEGACY_PREFIX = "claims_api_fleet_"


@router.get(
    "/reclaim/cursor",
    response={200: ReclaimCursorOut, **READ_ERRORS},
    operation_id=f"{LEGACY_PREFIX}reclaim_cursor_read",
)
def reclaim_cursor_read(request: HttpRequest) -> ReclaimCursorOut:
    """Where the fleet's bounded scan of the workflow table resumes, and how often it wrapped."""
    now_ms, _ = fleet_now()
    return ReclaimCursorOut.of(reclaim_cursor_get(), now_ms=now_ms)
