"""Engines: each engine's registration, heartbeat and last pass; the bulk release of its
claims, and its drain."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Field, Schema
from pydantic import field_validator

from claims.models import WORKFLOW_ID_MAX_LENGTH, Engine
from claims.selectors.engines.health import SILENT, SilentHolding
from claims.selectors.engines.sessions import session_of
from claims.services.claims import BULK_RELEASE_MAX, BulkReleaseOutcome

from .common import BodyIn, Epoch, Reason, fields_from, required_reason


class EngineSessionOut(Schema):
    """An engine's session lease (the engine-lease mode): its claims live while it does."""

    epoch: int
    expires_at_ms: int
    renewed_at_ms: int
    started_at_ms: int
    # Set once closed: by the engine itself at shutdown, or by the engine (closed_by) that
    # took its claims over once it had expired.
    closed_at_ms: int | None
    closed_by: str


class EngineOut(Schema):
    engine_id: str
    name: str  # the Celery worker's node name, e.g. engine1@host
    hostname: str
    pid: int
    queue: str
    status: str
    version: str
    started_at_ms: int
    started_at: datetime | None
    heartbeat_at_ms: int
    heartbeat_at: datetime | None
    heartbeat_age_ms: int
    clock_skew_ms: int | None
    clock_error_ms: int | None
    held_count: int
    pass_summary: dict[str, Any]
    # Set while an operator has the engine draining (null: not draining).
    drain_requested_at_ms: int | None = None
    draining: bool = False
    # `status`, or `silent`: live by status but no heartbeat for TTL + 2 x renew interval.
    display_status: str
    # Only for a silent engine: the claims naming it as holder, and when the last of them
    # can be taken over (its latest expiry plus grace; null when it holds none).
    silent_claims: int | None
    takeover_at_ms: int | None
    takeover_at: datetime | None
    # The engine-lease mode's session lease; null in the workflow-lease mode.
    session: EngineSessionOut | None = None

    @classmethod
    def of(cls, engine: Engine, *, now_ms: int, silent: SilentHolding | None = None) -> EngineOut:
        return cls(
            **fields_from(
                engine,
                cls,
                heartbeat_age_ms=now_ms - engine.heartbeat_at_ms,
                pass_summary=engine.pass_summary or {},
                display_status=engine.status if silent is None else SILENT,
                silent_claims=None if silent is None else silent.claims,
                takeover_at_ms=None if silent is None else silent.takeover_at_ms,
                session=_session_out(engine),
            )
        )


def _session_out(engine: Engine) -> EngineSessionOut | None:
    session = session_of(engine)
    if session is None:
        return None
    return EngineSessionOut(**fields_from(session, EngineSessionOut))


class EngineListOut(Schema):
    items: list[EngineOut]
    as_of_ms: int
    as_of: datetime | None


class BulkReleaseClaimIn(BodyIn):
    workflow_id: str = Field(min_length=1, max_length=WORKFLOW_ID_MAX_LENGTH)
    expected_epoch: Epoch


class BulkReleaseIn(BodyIn):
    """Each claim with the epoch the operator saw; at most BULK_RELEASE_MAX in one call."""

    reason: Reason
    claims: list[BulkReleaseClaimIn] = Field(min_length=1, max_length=BULK_RELEASE_MAX)

    _reason = field_validator("reason")(required_reason)


class BulkReleaseResultOut(Schema):
    """One claim's outcome: status 200 released, 409 it had moved on (or was not this
    engine's at that epoch) and was left alone."""

    workflow_id: str
    expected_epoch: int
    status: int
    outcome: str
    epoch_after: int | None
    current_epoch: int | None
    detail: str

    @classmethod
    def of(cls, outcome: BulkReleaseOutcome) -> BulkReleaseResultOut:
        given = {"status": outcome.http_status, "outcome": outcome.status}
        return cls(**fields_from(outcome, cls, **given))


class BulkReleaseOut(Schema):
    engine_id: str
    released: int
    moved_on: int
    results: list[BulkReleaseResultOut]


class DrainIn(BodyIn):
    reason: Reason

    _reason = field_validator("reason")(required_reason)


class DrainOut(Schema):
    """The engine as it is now; ``queue_told`` is null when it has no queue (it then
    learns at its next tick)."""

    engine: EngineOut
    queue_told: str | None
