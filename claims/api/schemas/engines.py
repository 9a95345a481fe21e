"""Engines: each engine's registration, heartbeat and last pass."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Schema

from claims.models import Engine

from .common import fields_from


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
            **fields_from(
                engine,
                cls,
                heartbeat_age_ms=now_ms - engine.heartbeat_at_ms,
                pass_summary=engine.pass_summary or {},
            )
        )


class EngineListOut(Schema):
    items: list[EngineOut]
    as_of_ms: int
    as_of: datetime | None
