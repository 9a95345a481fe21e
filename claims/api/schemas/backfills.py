"""Visibility backfills."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Schema
from pydantic import AwareDatetime, field_validator

from claims.models import BackfillJob, BackfillStatus

from .common import BodyIn, fields_from


class BackfillIn(BodyIn):
    run_at: AwareDatetime | None = None  # absent: as soon as a worker picks it up

    @field_validator("run_at", mode="before")
    @classmethod
    def _iso_text(cls, value: Any) -> Any:
        # Pydantic would also read a number as Unix seconds; a time must say what it means.
        if value is not None and not isinstance(value, str):
            raise ValueError("run_at is an ISO 8601 time with its UTC offset")
        return value


class BackfillOut(Schema):
    id: int
    kind: str
    status: str
    requested_by: str | None
    run_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    cursor: str | None
    processed: int
    inserted: int
    fixed: int
    conflicts: int
    total_estimate: int | None
    progress: float | None  # 0..1 when the total is estimated
    error: str

    @classmethod
    def of(cls, job: BackfillJob) -> BackfillOut:
        total = job.total_estimate
        progress = min(1.0, job.processed / total) if total else None
        if job.status == BackfillStatus.SUCCEEDED:
            progress = 1.0  # the table may have shrunk under the estimate
        return cls(**fields_from(job, cls, id=job.pk, total_estimate=total, progress=progress))
