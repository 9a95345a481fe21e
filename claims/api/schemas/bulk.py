"""Bulk jobs: the preview of an action on a query's workflows, the job it becomes, its
items by outcome."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from ninja import Field, Schema
from pydantic import StrictBool, StrictInt, field_validator

from claims.bulk.preview import BulkPreview, PreviewRow, max_items
from claims.models import (
    BulkAction,
    BulkItemOutcome,
    BulkJob,
    BulkJobItem,
    BulkJobStatus,
    BulkList,
)
from claims.protocol.constants import MAX_SAFE_INTEGER
from claims.query import MAX_LENGTH as QUERY_MAX_LENGTH
from claims.selectors.queues.bulk import (
    ITEM_PAGE_SIZE,
    JOB_LIMIT,
    BulkItemPage,
    BulkJobList,
    bulk_job_percent,
)
from claims.services.bulk import MAX_RATE_PER_S, TYPED_CONFIRMATION_ABOVE

from .common import BodyIn, EngineId, Reason, checked_identifier, fields_from, required_reason, utc

Count = Annotated[StrictInt, Field(ge=0, le=MAX_SAFE_INTEGER)]
BulkQueryText = Annotated[
    str,
    Field(
        min_length=1,
        max_length=QUERY_MAX_LENGTH,
        description=(
            "The query in the query language (claims/query/README.md) that selects the"
            " workflows, over the claims or the workflows listing (`list`). One that cannot be"
            " read or means nothing answers 422 with what is wrong and its position; one that"
            " runs past WEFTBOARD_QUERY_TIMEOUT_MS is stopped and refused with 422 too."
        ),
    ),
]


class _Selection(BodyIn):
    """What a preview and a job share: the workflows (a query over a listing) and the action."""

    list: BulkList
    query: BulkQueryText
    action: BulkAction
    # Takeover only: the engine every claim goes to (live, not draining); absent, they are
    # spread over the live engines.
    target_engine_id: EngineId | None = None

    _target = field_validator("target_engine_id")(checked_identifier)


class BulkPreviewIn(_Selection):
    pass


class BulkJobIn(_Selection):
    reason: Reason
    # The count the preview answered; required when the job would act on more than
    # TYPED_CONFIRMATION_ABOVE workflows.
    expected_count: Count | None = None
    # Create the job even when the query now selects another count than expected_count.
    accept_count_change: StrictBool = False
    # Items a second at most; absent: as fast as the chunks go.
    rate_per_s: Annotated[StrictInt, Field(ge=1, le=MAX_RATE_PER_S)] | None = None
    # The caller's name for this request: sent again (after a lost answer), it returns the
    # job the first one created instead of freezing another. A key names one request, so
    # another request under a used key is refused with 422, as the IETF Idempotency-Key
    # draft answers a key reused with another payload.
    request_key: (
        Annotated[
            str,
            Field(
                min_length=1,
                max_length=64,
                description=(
                    "Your name for this request, unique among your bulk jobs. Sent again "
                    "(after a lost answer), the request returns the job the first one "
                    "created; another request under a used key is refused (422)."
                ),
            ),
        ]
        | None
    ) = None

    _reason = field_validator("reason")(required_reason)


class BulkAbortIn(BodyIn):
    reason: Reason

    _reason = field_validator("reason")(required_reason)


class BulkRefusedOut(Schema):
    rule: str  # the rule's words, as the one-row action would refuse
    count: int


class BulkPreviewRowOut(Schema):
    workflow_id: str
    epoch: int  # the claim's epoch now; 0: never claimed
    status: str | None  # the workflow's status; null: its row is gone
    held: bool
    refusal: str | None  # the rule that would refuse it; null: it would be acted on

    @classmethod
    def of(cls, row: PreviewRow) -> BulkPreviewRowOut:
        return cls(**fields_from(row, cls))


class BulkPreviewOut(Schema):
    count: int  # workflows the query selects now
    acting: int  # those the action's rules would act on if nothing moved meanwhile
    refused: list[BulkRefusedOut]  # most refused first
    first: list[BulkPreviewRowOut]
    too_many: bool  # count is above max_items: a job would be refused
    max_items: int  # WEFTBOARD_BULK_MAX_ITEMS
    # Above TYPED_CONFIRMATION_ABOVE, a job needs the count back as expected_count.
    confirm_required: bool
    as_of_ms: int
    as_of: datetime | None

    @classmethod
    def of(cls, preview: BulkPreview) -> BulkPreviewOut:
        return cls(
            count=preview.count,
            acting=preview.acting,
            refused=[BulkRefusedOut(rule=r, count=n) for r, n in preview.refused.items()],
            first=[BulkPreviewRowOut.of(row) for row in preview.first],
            too_many=preview.too_many,
            max_items=max_items(),
            confirm_required=preview.count > TYPED_CONFIRMATION_ABOVE,
            as_of_ms=preview.as_of_ms,
            as_of=utc(preview.as_of_ms),
        )


class BulkCountsOut(Schema):
    """The frozen items by outcome; pending ones are not acted on yet."""

    pending: int
    done: int
    moved: int
    refused: int


class BulkJobOut(Schema):
    id: int
    list: str
    query: str  # as the service keeps it: the canonical text of the query
    action: str
    target_engine_id: str | None
    reason: str
    requested_by: str | None
    status: str
    previewed_count: int | None  # the expected_count the job was created with
    frozen_count: int
    counts: BulkCountsOut
    percent: float  # of the frozen items acted on, 0-100
    rate_per_s: int | None
    request_key: str | None
    error: str
    created_at_ms: int
    created_at: datetime | None
    started_at_ms: int | None
    started_at: datetime | None
    finished_at_ms: int | None
    finished_at: datetime | None

    @classmethod
    def of(cls, job: BulkJob) -> BulkJobOut:
        counts = BulkCountsOut(
            pending=job.pending_count,
            done=job.done_count,
            moved=job.moved_count,
            refused=job.refused_count,
        )
        return cls(
            **fields_from(
                job,
                cls,
                id=job.pk,
                list=job.list_name,
                counts=counts,
                percent=bulk_job_percent(job),
            )
        )


class BulkJobFilterIn(Schema):
    status: BulkJobStatus | None = None
    limit: int = Field(JOB_LIMIT, ge=1, le=200)


class BulkJobListOut(Schema):
    items: list[BulkJobOut]  # newest first
    any_active: bool  # one of them is queued or running
    as_of_ms: int
    as_of: datetime | None

    @classmethod
    def of(cls, listing: BulkJobList) -> BulkJobListOut:
        return cls(
            items=[BulkJobOut.of(job) for job in listing.jobs],
            any_active=listing.any_active,
            as_of_ms=listing.as_of_ms,
            as_of=utc(listing.as_of_ms),
        )


class BulkItemFilterIn(Schema):
    outcome: BulkItemOutcome | None = None
    cursor: int | None = Field(None, ge=0, le=MAX_SAFE_INTEGER)
    # Absent: ITEM_PAGE_SIZE; the CSV takes neither a cursor nor a limit.
    limit: int | None = Field(None, ge=1, le=1_000)
    format: Literal["json", "csv"] = "json"

    def page_size(self) -> int:
        return ITEM_PAGE_SIZE if self.limit is None else self.limit


class BulkItemOut(Schema):
    id: int  # the keyset: items go in id order, the order the job acts in
    workflow_id: str
    frozen_epoch: int  # the claim's epoch when the job was created; 0: never claimed
    outcome: str
    epoch_after: int | None
    detail: str
    acted_at_ms: int | None
    acted_at: datetime | None

    @classmethod
    def of(cls, item: BulkJobItem) -> BulkItemOut:
        return cls(**fields_from(item, cls, id=item.pk))


class BulkItemPageOut(Schema):
    items: list[BulkItemOut]
    next_cursor: int | None
    as_of_ms: int
    as_of: datetime | None

    @classmethod
    def of(cls, page: BulkItemPage) -> BulkItemPageOut:
        return cls(
            items=[BulkItemOut.of(item) for item in page.items],
            next_cursor=page.next_cursor,
            as_of_ms=page.as_of_ms,
            as_of=utc(page.as_of_ms),
        )


class BulkCountChangedOut(Schema):
    """409 on create: the query selects another count than the preview did."""

    detail: str
    previewed: int
    frozen: int
