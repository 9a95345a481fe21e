"""The engines of the fleet, and the claims they failed to drive (pending re-drives); the
operator's actions on a whole engine: release all its claims, drain and undrain."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query

from claims.fleet_clock import fleet_now
from claims.models import Engine, EngineStatus
from claims.protocol.ids import check_engine_id
from claims.selectors.engines.actions import engine_get
from claims.selectors.engines.health import silent_holdings_of
from claims.selectors.engines.listing import engines_with_sessions
from claims.selectors.queues.redrives import redrive_page
from claims.services.claims import claims_force_release_for_engine
from claims.services.drain import engine_drain, engine_undrain

from .access import check_write, write_throttle
from .router import router
from .schemas import (
    READ_ERRORS,
    WRITE_ERRORS,
    BulkReleaseIn,
    BulkReleaseOut,
    BulkReleaseResultOut,
    DrainIn,
    DrainOut,
    EngineListOut,
    EngineOut,
    ErrorOut,
    RedriveFilterIn,
    RedriveOut,
    RedrivePageOut,
    utc,
)

# These routes lived in claims/api/fleet.py, and OpenAPI names an operation after its module:
# keep those names, which generated clients name their methods after.
LEGACY_PREFIX = "claims_api_fleet_"

FORCE_PERMISSION = "claims.force_claim"
DRAIN_PERMISSION = "claims.drain_engine"


@router.get(
    "/engines",
    response={200: EngineListOut, **READ_ERRORS},
    operation_id=f"{LEGACY_PREFIX}engines_list",
)
def engines_list(request: HttpRequest, status: EngineStatus | None = None) -> EngineListOut:
    """Every engine with its worker name, heartbeat age, clock skew, held claims and last pass
    summaries; `display_status` is `silent` for a live engine whose heartbeat is older than
    TTL + 2 x renew interval, with the claims it still holds and their takeover time."""
    now_ms, timing = fleet_now()
    engines = engines_with_sessions(status=status)
    silent = silent_holdings_of(engines, now_ms, timing)
    return EngineListOut(
        items=[
            EngineOut.of(engine, now_ms=now_ms, silent=silent.get(engine.engine_id))
            for engine in engines
        ],
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
    page = redrive_page(engine=filters.engine, cursor=filters.cursor, limit=filters.limit)
    return RedrivePageOut(
        items=[RedriveOut.of(row) for row in page.items],
        next_cursor=page.next_cursor,
        as_of_ms=now_ms,
        as_of=utc(now_ms),
    )


@router.post(
    "/engines/{engine_id}/claims/release",
    response={**WRITE_ERRORS, 200: BulkReleaseOut, 404: ErrorOut},
    throttle=write_throttle,
)
def engine_claims_release(
    request: HttpRequest, engine_id: str, payload: BulkReleaseIn
) -> BulkReleaseOut:
    """Force release each listed claim the engine still holds at `expected_epoch`, each in
    its own transaction and audit event. One that moved on is left alone and answered
    with status 409 in its row; the call itself answers 200."""
    actor = check_write(request, FORCE_PERMISSION)
    engine_id = check_engine_id(engine_id)
    _existing_engine(engine_id)
    outcomes = claims_force_release_for_engine(
        engine_id,
        [(c.workflow_id, c.expected_epoch) for c in payload.claims],
        actor=actor,
        reason=payload.reason,
    )
    released = sum(o.status == "released" for o in outcomes)
    return BulkReleaseOut(
        engine_id=engine_id,
        released=released,
        moved_on=len(outcomes) - released,
        results=[BulkReleaseResultOut.of(o) for o in outcomes],
    )


def _existing_engine(engine_id: str) -> Engine:
    engine = engine_get(engine_id)
    if engine is None:
        raise Engine.DoesNotExist(engine_id)  # answered 404 by weftboard/api.py
    return engine


def _drain_answer(engine_id: str, queue: str | None) -> DrainOut:
    now_ms, _ = fleet_now()
    engine = _existing_engine(engine_id)
    return DrainOut(engine=EngineOut.of(engine, now_ms=now_ms), queue_told=queue)


@router.post(
    "/engines/{engine_id}/drain",
    response={**WRITE_ERRORS, 200: DrainOut, 404: ErrorOut},
    throttle=write_throttle,
)
def engine_drain_start(request: HttpRequest, engine_id: str, payload: DrainIn) -> DrainOut:
    """Drain: the engine stops acquiring and taking over, lets its drives reach their next
    checkpoint and releases its claims. 409 when it is not live or already draining."""
    actor = check_write(request, DRAIN_PERMISSION)
    engine_id = check_engine_id(engine_id)
    queue = engine_drain(engine_id, actor=actor, reason=payload.reason)
    return _drain_answer(engine_id, queue)


@router.post(
    "/engines/{engine_id}/undrain",
    response={**WRITE_ERRORS, 200: DrainOut, 404: ErrorOut},
    throttle=write_throttle,
)
def engine_drain_stop(request: HttpRequest, engine_id: str, payload: DrainIn) -> DrainOut:
    """Undrain: the engine acquires and takes over again. 409 when it is not draining."""
    actor = check_write(request, DRAIN_PERMISSION)
    engine_id = check_engine_id(engine_id)
    queue = engine_undrain(engine_id, actor=actor, reason=payload.reason)
    return _drain_answer(engine_id, queue)
