"""Claims: the listing, the diagnostic read, and the two forced actions (CAS on the epoch)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query

from claims.fleet_clock import fleet_now
from claims.protocol.errors import WorkflowNotFoundError
from claims.protocol.ids import check_workflow_id
from claims.query import parse
from claims.selectors import claim_list
from claims.selectors.claims.ownership import claim_snapshot, workflow_ownership
from claims.selectors.workflows.lookup import workflow_exists
from claims.services.claims import claim_force_release, claim_force_takeover_and_notify

from .access import check_write, write_throttle
from .router import WORKFLOW, router
from .schemas import (
    READ_ERRORS,
    WRITE_ERRORS,
    ClaimFilterIn,
    ClaimPageOut,
    ClaimStateOut,
    ErrorOut,
    ForcedActionOut,
    OwnershipOut,
    ReleaseIn,
    StaleEpochOut,
    TakeoverIn,
)

FORCE_PERMISSION = "claims.force_claim"


@router.get("/claims", response={200: ClaimPageOut, **READ_ERRORS})
def claims_list(request: HttpRequest, filters: Query[ClaimFilterIn]) -> ClaimPageOut:
    """Claims with their derived state, in `sort` order (the workflow id breaks ties);
    follow `next_cursor`, with the same sort, for more. `q` matches any part of the id;
    `query` selects in the query language."""
    now_ms, timing = fleet_now()
    page = claim_list(
        now_ms=now_ms,
        timing=timing,
        state=filters.state,
        engine=filters.engine,
        prefix=filters.prefix,
        search=filters.q,
        sort=filters.sort,
        cursor=filters.cursor,
        limit=filters.limit,
        query=parse(filters.query) if filters.query else None,
    )
    return ClaimPageOut.of(page)


@router.get(
    f"/workflows/{WORKFLOW}/ownership",
    response={200: OwnershipOut, 404: ErrorOut, **READ_ERRORS},
)
def workflow_ownership_read(request: HttpRequest, workflow_id: str) -> OwnershipOut:
    """Who holds the workflow, whether that claim has expired, and what happened to it lately."""
    workflow_id = check_workflow_id(workflow_id)
    now_ms, timing = fleet_now()
    ownership = workflow_ownership(workflow_id, now_ms=now_ms, timing=timing)
    if ownership is None:
        raise WorkflowNotFoundError(workflow_id)
    return OwnershipOut.of(ownership)


def _existing_workflow_id(workflow_id: str) -> str:
    workflow_id = check_workflow_id(workflow_id)
    if not workflow_exists(workflow_id):
        raise WorkflowNotFoundError(workflow_id)
    return workflow_id


def _fresh_claim(workflow_id: str) -> ClaimStateOut:
    now_ms, timing = fleet_now()
    return ClaimStateOut.of(claim_snapshot(workflow_id, now_ms=now_ms, timing=timing))


@router.post(
    f"/workflows/{WORKFLOW}/claim/release",
    response={**WRITE_ERRORS, 200: ForcedActionOut, 409: StaleEpochOut | ErrorOut},
    throttle=write_throttle,
)
def claim_release(request: HttpRequest, workflow_id: str, payload: ReleaseIn) -> ForcedActionOut:
    """Force release: epoch + 1 and no holder, if the claim is still at `expected_epoch`.

    The old holder is deposed on its next write; the next reclaim pass picks the workflow up.
    """
    actor = check_write(request, FORCE_PERMISSION)
    workflow_id = _existing_workflow_id(workflow_id)
    epoch = claim_force_release(
        workflow_id, expected_epoch=payload.expected_epoch, actor=actor, reason=payload.reason
    )
    return ForcedActionOut(
        workflow_id=workflow_id,
        epoch_before=payload.expected_epoch,
        epoch_after=epoch,
        claim=_fresh_claim(workflow_id),
    )


@router.post(
    f"/workflows/{WORKFLOW}/claim/takeover",
    response={**WRITE_ERRORS, 200: ForcedActionOut, 409: StaleEpochOut | ErrorOut},
    throttle=write_throttle,
)
def claim_takeover(request: HttpRequest, workflow_id: str, payload: TakeoverIn) -> ForcedActionOut:
    """Force takeover: epoch + 1 granted to an active engine, if the claim is still at
    `expected_epoch`; once committed, the engine is told on its own queue to adopt and drive
    the workflow. `adopt_queue` is null for an engine without a queue: the claim then
    expires unrenewed and the next reclaim pass takes the workflow over."""
    actor = check_write(request, FORCE_PERMISSION)
    workflow_id = _existing_workflow_id(workflow_id)
    takeover = claim_force_takeover_and_notify(
        workflow_id,
        expected_epoch=payload.expected_epoch,
        target_engine_id=payload.target_engine_id,
        actor=actor,
        reason=payload.reason,
    )
    return ForcedActionOut(
        workflow_id=workflow_id,
        epoch_before=payload.expected_epoch,
        epoch_after=takeover.epoch,
        claim=_fresh_claim(workflow_id),
        adopt_queue=takeover.adopt_queue,
    )
