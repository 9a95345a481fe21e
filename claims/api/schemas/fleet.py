"""Fleet: engines, the reclaim cursor, pending re-drives."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Field, Schema
from pydantic import field_validator

from claims.models import ENGINE_ID_MAX_LENGTH, Engine, PendingRedrive, ReclaimCursor
from claims.protocol.constants import MAX_SAFE_INTEGER

from .common import checked_identifier, utc


class RedriveOut(Schema):
    id: int
    engine_id: str
    workflow_id: str
    epoch: int
    attempts: int
    last_error: str
    first_failed_at_ms: int
    first_failed_at: datetime | None
    last_failed_at_ms: int
    last_failed_at: datetime | None

    @classmethod
    def of(cls, row: PendingRedrive) -> RedriveOut:
        return cls(
            id=row.pk,
            engine_id=row.engine_id,
            workflow_id=row.workflow_id,
            epoch=row.epoch,
            attempts=row.attempts,
            last_error=row.last_error,
            first_failed_at_ms=row.first_failed_at_ms,
            first_failed_at=utc(row.first_failed_at_ms),
            last_failed_at_ms=row.last_failed_at_ms,
            last_failed_at=utc(row.last_failed_at_ms),
        )


class EngineOut(Schema):
    engine_id: str
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

    @classmethod
    def of(cls, engine: Engine, *, now_ms: int) -> EngineOut:
        return cls(
            engine_id=engine.engine_id,
            hostname=engine.hostname,
            pid=engine.pid,
            queue=engine.queue,
            status=engine.status,
            version=engine.version,
            started_at_ms=engine.started_at_ms,
            started_at=utc(engine.started_at_ms),
            heartbeat_at_ms=engine.heartbeat_at_ms,
            heartbeat_at=utc(engine.heartbeat_at_ms),
            heartbeat_age_ms=now_ms - engine.heartbeat_at_ms,
            clock_skew_ms=engine.clock_skew_ms,
            clock_error_ms=engine.clock_error_ms,
            held_count=engine.held_count,
            pass_summary=engine.pass_summary or {},
        )


class EngineListOut(Schema):
    items: list[EngineOut]
    as_of_ms: int
    as_of: datetime | None


class ReclaimCursorOut(Schema):
    name: str
    last_workflow_id: str | None  # null: at the start of the keyspace
    wraps: int
    scanned_total: int
    updated_at_ms: int
    updated_at: datetime | None
    updated_by: str
    as_of_ms: int
    as_of: datetime | None

    @classmethod
    def of(cls, cursor: ReclaimCursor, *, now_ms: int) -> ReclaimCursorOut:
        return cls(
            name=cursor.name,
            last_workflow_id=cursor.last_workflow_id,
            wraps=cursor.wraps,
            scanned_total=cursor.scanned_total,
            updated_at_ms=cursor.updated_at_ms,
            updated_at=utc(cursor.updated_at_ms) if cursor.updated_at_ms else None,
            updated_by=cursor.updated_by,
            as_of_ms=now_ms,
            as_of=utc(now_ms),
        )


class RedriveFilterIn(Schema):
    engine: str | None = Field(None, max_length=ENGINE_ID_MAX_LENGTH)
    cursor: int | None = Field(None, ge=0, le=MAX_SAFE_INTEGER)
    limit: int = Field(50, ge=1, le=200)

    _engine = field_validator("engine")(checked_identifier)


class RedrivePageOut(Schema):
    items: list[RedriveOut]
    next_cursor: int | None
    as_of_ms: int
    as_of: datetime | None
