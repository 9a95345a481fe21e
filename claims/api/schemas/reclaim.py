"""The reclaim scan's shared cursor, and the re-drives left pending for engines."""

from __future__ import annotations

from datetime import datetime

from ninja import Field, Schema
from pydantic import field_validator

from claims.models import ENGINE_ID_MAX_LENGTH, PendingRedrive, ReclaimCursor
from claims.protocol.constants import MAX_SAFE_INTEGER

from .common import checked_identifier, fields_from, utc


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
        return cls(**fields_from(row, cls, id=row.pk))


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
        # A cursor no pass has moved yet was never updated: 0 is no time, not 1970.
        updated_at = utc(cursor.updated_at_ms) if cursor.updated_at_ms else None
        return cls(**fields_from(cursor, cls, updated_at=updated_at, as_of_ms=now_ms))


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
