"""Workflows: start one, and cancel one (an external terminal transition that rotates the epoch)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest
from ninja import Status

from claims import services
from claims.clock import fleet_clock
from claims.conf import claim_timing
from claims.runtime.errors import UnknownWorkflowTypeError
from claims.runtime.types import is_type_registered, load_workflow_modules
from claims.selectors.ownership import claim_snapshot

from .access import check_write, write_throttle
from .router import WORKFLOW, router
from .schemas import (
    WRITE_ERRORS,
    ClaimStateOut,
    WorkflowCancelIn,
    WorkflowCancelOut,
    WorkflowOut,
    WorkflowStartIn,
)


def _check_workflow_type(workflow_type: str) -> str:
    """Only types some engine can run: the web process loads the engines' workflow modules."""
    load_workflow_modules(settings.WEFTBOARD_WORKFLOW_MODULES)
    if not is_type_registered(workflow_type):
        raise UnknownWorkflowTypeError(workflow_type)
    return workflow_type


@router.post("/workflows", response={**WRITE_ERRORS, 201: WorkflowOut}, throttle=write_throttle)
def workflow_create(request: HttpRequest, payload: WorkflowStartIn) -> Status[WorkflowOut]:
    """Start a workflow; it starts ownerless and the next reclaim pass claims it.

    An id already in use answers 409; an unknown type 422.
    """
    check_write(request, "claims.add_workflow")
    workflow = services.workflow_start(
        workflow_type=_check_workflow_type(payload.workflow_type),
        input=payload.input,
        workflow_id=payload.workflow_id,
    )
    return Status(201, WorkflowOut.of(workflow))


@router.post(
    f"/workflows/{WORKFLOW}/cancel",
    response={**WRITE_ERRORS, 200: WorkflowCancelOut},
    throttle=write_throttle,
)
def workflow_cancel(
    request: HttpRequest, workflow_id: str, payload: WorkflowCancelIn | None = None
) -> WorkflowCancelOut:
    """Cancel a workflow that has not ended; its claim moves to the next epoch with no holder,
    so its engine is deposed on its next write. A finished workflow answers 409; with
    `expected_epoch`, so does a claim that has moved (the body carries the fresh claim)."""
    actor = check_write(request, "claims.cancel_workflow")
    reason = "" if payload is None else payload.reason.strip()
    expected = None if payload is None else payload.expected_epoch
    workflow = services.workflow_cancel(
        workflow_id, actor=actor, reason=reason, expected_epoch=expected
    )
    snapshot = claim_snapshot(workflow.workflow_id, now_ms=fleet_clock()(), timing=claim_timing())
    return WorkflowCancelOut(workflow=WorkflowOut.of(workflow), claim=ClaimStateOut.of(snapshot))
