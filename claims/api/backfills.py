"""Visibility backfills: schedule one, follow its progress, cancel it.

Scheduling and cancelling belong to claims.services.backfills; a second active job
answers 409.
"""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Path, Status

from claims.protocol.constants import MAX_SAFE_INTEGER
from claims.selectors.queues.backfills import backfill_get
from claims.services.backfills import backfill_cancel, backfill_schedule

from .access import check_write, write_throttle
from .router import router
from .schemas import READ_ERRORS, WRITE_ERRORS, BackfillIn, BackfillOut, ErrorOut

SCHEDULE_PERMISSION = "claims.schedule_backfill"


@router.post("/backfills", response={**WRITE_ERRORS, 201: BackfillOut}, throttle=write_throttle)
def backfill_create(request: HttpRequest, payload: BackfillIn) -> Status[BackfillOut]:
    """Schedule a visibility backfill, now or at `run_at`; 409 while another is active."""
    actor = check_write(request, SCHEDULE_PERMISSION)
    job = backfill_schedule(run_at=payload.run_at, requested_by=actor)
    return Status(201, BackfillOut.of(job))


@router.get("/backfills/{job_id}", response={200: BackfillOut, 404: ErrorOut, **READ_ERRORS})
def backfill_read(
    request: HttpRequest, job_id: int = Path(..., ge=1, le=MAX_SAFE_INTEGER)
) -> BackfillOut:
    """One backfill job with its counters and progress."""
    return BackfillOut.of(backfill_get(job_id))


@router.post(
    "/backfills/{job_id}/cancel",
    response={**WRITE_ERRORS, 200: BackfillOut},
    throttle=write_throttle,
)
def backfill_cancel_route(
    request: HttpRequest, job_id: int = Path(..., ge=1, le=MAX_SAFE_INTEGER)
) -> BackfillOut:
    """Cancel a scheduled or running backfill; it stops after its current batch."""
    actor = check_write(request, SCHEDULE_PERMISSION)
    return BackfillOut.of(backfill_cancel(job_id=job_id, actor=actor))
