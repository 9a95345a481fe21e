"""Workflows: start one; cancel, suspend or resume one (transitions from outside its engine
that rotate the epoch, so its engine is deposed on its next write).

The rules (read-only switch, a registered type, the operator's reason) are the services'
(claims.services.rules); weftboard.api maps what they raise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.http import HttpRequest
from ninja import Query, Status

from claims.fleet_clock import fleet_now
from claims.models import Workflow
from claims.protocol.errors import InvalidInputError
from claims.query import parse
from claims.selectors.claims.ownership import claim_snapshot
from claims.selectors.workflows.listing import WorkflowFilters, workflow_list
from claims.services.workflows import (
    workflow_cancel,
    workflow_resume,
    workflow_start,
    workflow_suspend,
)

from .access import check_write, write_throttle
from .router import WORKFLOW, router
from .schemas import (
    READ_ERRORS,
    WRITE_ERRORS,
    ClaimStateOut,
    WorkflowCancelIn,
    WorkflowCancelOut,
    WorkflowFilterIn,
    WorkflowOut,
    WorkflowPageOut,
    WorkflowStartIn,
    WorkflowSuspendIn,
)

RouteFunction = TypeVar("RouteFunction", bound=Callable[..., Any])


@router.get("/workflows", response={200: WorkflowPageOut, **READ_ERRORS})
def workflows_list(request: HttpRequest, filters: Query[WorkflowFilterIn]) -> WorkflowPageOut:
    """Workflows newest change first (`sort=updated`), newest started first (`created`) or in
    id order (`id`), filtered by type, status and a `since_ms`/`until_ms` range on the
    `time` column; follow `next_cursor`, with the same sort, for more. `status_counts`
    counts every status under the type and time filters; without a time filter, they are
    beat's fleet snapshot's counts, at most two renew intervals old; under a time filter,
    each status is counted up to 10,000 and `capped_statuses` names those that reached it
    (at least that many). `query` selects in the query language; under a query each status
    is counted up to 10,000 too."""
    if (
        filters.since_ms is not None
        and filters.until_ms is not None
        and filters.since_ms >= filters.until_ms
    ):
        raise InvalidInputError("since_ms must be earlier than until_ms")
    now_ms, timing = fleet_now()
    selection = WorkflowFilters(
        workflow_type=filters.type,
        status=filters.status,
        time_field=filters.time,
        since_ms=filters.since_ms,
        until_ms=filters.until_ms,
        sort=filters.sort,
        query=parse(filters.query) if filters.query else None,
    )
    page = workflow_list(
        selection, now_ms=now_ms, cursor=filters.cursor, limit=filters.limit, timing=timing
    )
    return WorkflowPageOut.of(page)


@router.post("/workflows", response={**WRITE_ERRORS, 201: WorkflowOut}, throttle=write_throttle)
def workflow_create(request: HttpRequest, payload: WorkflowStartIn) -> Status[WorkflowOut]:
    """Start a workflow; it starts ownerless and the next reclaim pass claims it.

    An id already in use answers 409; an unknown type 422.
    """
    check_write(request, "claims.add_workflow")
    workflow = workflow_start(
        workflow_type=payload.workflow_type,
        input=payload.input,
        workflow_id=payload.workflow_id,
        actor=request.user.get_username(),
    )
    return Status(201, WorkflowOut.of(workflow))


def _transition_route(verb: str) -> Callable[[RouteFunction], RouteFunction]:
    """POST /workflows/{id}/<verb>, answered with the workflow and its claim as they are now."""
    return router.post(
        f"/workflows/{WORKFLOW}/{verb}",
        response={**WRITE_ERRORS, 200: WorkflowCancelOut},
        throttle=write_throttle,
        # Fixed names, kept from before the functions were renamed to free the services'
        # names: OpenAPI clients name their methods after the operation id.
        operation_id=f"claims_api_workflows_workflow_{verb}",
        url_name=f"workflow_{verb}",
    )


@_transition_route("cancel")
def workflow_cancel_route(
    request: HttpRequest, workflow_id: str, payload: WorkflowCancelIn | None = None
) -> WorkflowCancelOut:
    """Cancel a workflow that has not ended; its claim moves to the next epoch with no holder,
    so its engine is deposed on its next write. A finished workflow answers 409; with
    `expected_epoch`, so does a claim that has moved (the body carries the fresh claim)."""
    actor = check_write(request, "claims.cancel_workflow")
    reason = "" if payload is None else payload.reason
    expected = None if payload is None else payload.expected_epoch
    workflow = workflow_cancel(workflow_id, actor=actor, reason=reason, expected_epoch=expected)
    return _after_transition(workflow)


@_transition_route("suspend")
def workflow_suspend_route(
    request: HttpRequest, workflow_id: str, payload: WorkflowSuspendIn
) -> WorkflowCancelOut:
    """Suspend a running workflow; its claim moves to the next epoch with no holder, so its
    engine is deposed on its next write, and no reclaim pass takes it back until it is
    resumed. `expected_epoch` is required (0: never claimed): a claim that has moved
    answers 409 (the body carries the fresh claim), and so does a workflow not running."""
    return _suspend_or_resume(request, workflow_id, payload, workflow_suspend)


@_transition_route("resume")
def workflow_resume_route(
    request: HttpRequest, workflow_id: str, payload: WorkflowSuspendIn
) -> WorkflowCancelOut:
    """Resume a suspended workflow: running again, ownerless at the next epoch, so the next
    reclaim pass grants it to an engine, which carries on from its last checkpoint. The
    same `expected_epoch` rule as suspend; a workflow not suspended answers 409."""
    return _suspend_or_resume(request, workflow_id, payload, workflow_resume)


def _suspend_or_resume(
    request: HttpRequest,
    workflow_id: str,
    payload: WorkflowSuspendIn,
    transition: Callable[..., Workflow],
) -> WorkflowCancelOut:
    actor = check_write(request, "claims.suspend_workflow")
    workflow = transition(
        workflow_id, actor=actor, reason=payload.reason, expected_epoch=payload.expected_epoch
    )
    return _after_transition(workflow)


def _after_transition(workflow: Workflow) -> WorkflowCancelOut:
    """The answer to a transition: the workflow and its claim as they are now."""
    now_ms, timing = fleet_now()
    snapshot = claim_snapshot(workflow.workflow_id, now_ms=now_ms, timing=timing)
    return WorkflowCancelOut(workflow=WorkflowOut.of(workflow), claim=ClaimStateOut.of(snapshot))
