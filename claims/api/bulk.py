"""Bulk jobs: preview an action on the workflows a query selects, create the job, follow
it and its items (a page at a time, or every item as CSV), pause, resume and abort it.

Every write, the preview included, needs the write scope, the action's own permission and
``claims.bulk_operate`` (claims.bulk.actions.permissions_for), and is refused in read-only
mode: a preview is the first step of a job and reads as much as one freeze does, so it is
offered to whoever may create the job and counted as a write. The rules of a job (its
count, its status) are the service's (claims.services.bulk); weftboard.api maps what it
raises, a changed count to 409 with both numbers.
"""

from __future__ import annotations

from django.http import HttpRequest, StreamingHttpResponse
from ninja import Path, Query, Status

from claims.bulk.actions import BULK_PERMISSION, permissions_for
from claims.bulk.preview import bulk_preview
from claims.fleet_clock import fleet_now
from claims.http.csv_export import csv_download
from claims.protocol.constants import MAX_SAFE_INTEGER
from claims.protocol.errors import InvalidInputError
from claims.query import parse
from claims.selectors.queues.bulk import (
    ITEM_CSV_HEADER,
    bulk_item_page,
    bulk_item_rows,
    bulk_job_get,
    bulk_job_list,
)
from claims.services.bulk import (
    BulkRequest,
    bulk_job_abort,
    bulk_job_create,
    bulk_job_pause,
    bulk_job_resume,
)

from .access import check_write, write_throttle
from .router import router
from .schemas import READ_ERRORS, WRITE_ERRORS, ErrorOut
from .schemas.bulk import (
    BulkAbortIn,
    BulkCountChangedOut,
    BulkItemFilterIn,
    BulkItemPageOut,
    BulkJobFilterIn,
    BulkJobIn,
    BulkJobListOut,
    BulkJobOut,
    BulkPreviewIn,
    BulkPreviewOut,
)

# The CSV beside the JSON page in the OpenAPI document, so clients and the fuzzer expect it.
# (Ninja keys the responses by int: a "200" would stand beside its 200, not join it.)
CSV_RESPONSE = {"responses": {200: {"content": {"text/csv": {"schema": {"type": "string"}}}}}}


def check_bulk_write(request: HttpRequest, action: str) -> str:
    """check_write for each permission a job of ``action`` needs; the actor name."""
    own, bulk = permissions_for(action)
    check_write(request, bulk)
    return check_write(request, own)


@router.post(
    "/bulk-jobs/preview",
    response={**WRITE_ERRORS, 200: BulkPreviewOut},
    throttle=write_throttle,
)
def bulk_job_preview(request: HttpRequest, payload: BulkPreviewIn) -> BulkPreviewOut:
    """What a job would do now: how many workflows the query selects, how many the action's
    rules would refuse and why, and the first rows. Above 100 (`confirm_required`) a job
    is created with `count` as its `expected_count`. Nothing is written; it needs what a
    job needs (write scope, the action's permission, `claims.bulk_operate`)."""
    check_bulk_write(request, payload.action)
    if payload.target_engine_id is not None and payload.action != "takeover":
        raise InvalidInputError("only a takeover names a target engine")
    now_ms, timing = fleet_now()
    preview = bulk_preview(
        payload.list, parse(payload.query), payload.action, now_ms=now_ms, timing=timing
    )
    return BulkPreviewOut.of(preview)


@router.post(
    "/bulk-jobs",
    response={**WRITE_ERRORS, 201: BulkJobOut, 409: BulkCountChangedOut},
    throttle=write_throttle,
)
def bulk_job_create_route(request: HttpRequest, payload: BulkJobIn) -> Status[BulkJobOut]:
    """Freeze the workflows the query selects, each at its claim epoch, into a queued job
    that acts on them in chunks, fenced on those epochs. Above 100 workflows `expected_count`
    (the preview's count) is required; a count other than it answers 409 with `previewed`
    and `frozen`, and nothing is kept, unless `accept_count_change` is true. A `request_key`
    (the client's name for the request) makes a create sent again, after its answer was
    lost, return the job the first one created."""
    actor = check_bulk_write(request, payload.action)
    job = bulk_job_create(
        BulkRequest(
            list_name=payload.list,
            query=payload.query,
            action=payload.action,
            reason=payload.reason,
            target_engine_id=payload.target_engine_id,
            expected_count=payload.expected_count,
            accept_count_change=payload.accept_count_change,
            rate_per_s=payload.rate_per_s,
            request_key=payload.request_key,
        ),
        actor=actor,
    )
    return Status(201, BulkJobOut.of(job))


@router.get("/bulk-jobs", response={200: BulkJobListOut, **READ_ERRORS})
def bulk_jobs_list(request: HttpRequest, filters: Query[BulkJobFilterIn]) -> BulkJobListOut:
    """Bulk jobs newest first, at most `limit`, of one `status` if given."""
    now_ms, _ = fleet_now()
    return BulkJobListOut.of(
        bulk_job_list(now_ms=now_ms, status=filters.status, limit=filters.limit)
    )


@router.get("/bulk-jobs/{job_id}", response={200: BulkJobOut, 404: ErrorOut, **READ_ERRORS})
def bulk_job_read(
    request: HttpRequest, job_id: int = Path(..., ge=1, le=MAX_SAFE_INTEGER)
) -> BulkJobOut:
    """One job: what it acts on and why, its status, its items counted by outcome."""
    return BulkJobOut.of(bulk_job_get(job_id))


@router.get(
    "/bulk-jobs/{job_id}/items",
    response={200: BulkItemPageOut, 404: ErrorOut, **READ_ERRORS},
    openapi_extra=CSV_RESPONSE,
)
def bulk_job_items(
    request: HttpRequest,
    filters: Query[BulkItemFilterIn],
    job_id: int = Path(..., ge=1, le=MAX_SAFE_INTEGER),
) -> BulkItemPageOut | StreamingHttpResponse:
    """A job's items in the order it acts on them, of one `outcome` if given; follow
    `next_cursor` for more. `format=csv` streams every item (under `outcome`) as CSV
    instead, each `*_ms` time followed by the same instant in UTC; it takes no cursor or
    limit."""
    job = bulk_job_get(job_id)  # 404 before an empty page or download
    if filters.format == "csv":
        if filters.cursor is not None or filters.limit is not None:
            raise InvalidInputError("the CSV holds every item: it takes no cursor or limit")
        rows = bulk_item_rows(job.pk, outcome=filters.outcome)
        return csv_download(ITEM_CSV_HEADER, rows, f"weftboard-bulk-job-{job.pk}.csv")
    now_ms, _ = fleet_now()
    page = bulk_item_page(
        job.pk,
        now_ms=now_ms,
        outcome=filters.outcome,
        cursor=filters.cursor,
        limit=filters.page_size(),
    )
    return BulkItemPageOut.of(page)


def _job_write(request: HttpRequest, job_id: int) -> str:
    """The checks of a write on a job: bulk_operate first, so whoever lacks it learns
    nothing more; then the job (404) and its action's own permission."""
    check_write(request, BULK_PERMISSION)
    job = bulk_job_get(job_id)
    own, _ = permissions_for(job.action)
    return check_write(request, own)


@router.post(
    "/bulk-jobs/{job_id}/pause",
    response={**WRITE_ERRORS, 200: BulkJobOut},
    throttle=write_throttle,
)
def bulk_job_pause_route(
    request: HttpRequest, job_id: int = Path(..., ge=1, le=MAX_SAFE_INTEGER)
) -> BulkJobOut:
    """Stop a queued or running job after the chunk in flight; 409 for any other status."""
    actor = _job_write(request, job_id)
    return BulkJobOut.of(bulk_job_pause(job_id, actor=actor))


@router.post(
    "/bulk-jobs/{job_id}/resume",
    response={**WRITE_ERRORS, 200: BulkJobOut},
    throttle=write_throttle,
)
def bulk_job_resume_route(
    request: HttpRequest, job_id: int = Path(..., ge=1, le=MAX_SAFE_INTEGER)
) -> BulkJobOut:
    """Carry on with a paused job from where it stopped; 409 for any other status."""
    actor = _job_write(request, job_id)
    return BulkJobOut.of(bulk_job_resume(job_id, actor=actor))


@router.post(
    "/bulk-jobs/{job_id}/abort",
    response={**WRITE_ERRORS, 200: BulkJobOut},
    throttle=write_throttle,
)
def bulk_job_abort_route(
    request: HttpRequest, payload: BulkAbortIn, job_id: int = Path(..., ge=1, le=MAX_SAFE_INTEGER)
) -> BulkJobOut:
    """End a job that has not ended; its pending items are never acted on. 409 for a job
    that has ended."""
    actor = _job_write(request, job_id)
    return BulkJobOut.of(bulk_job_abort(job_id, actor=actor, reason=payload.reason))
