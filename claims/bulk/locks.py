"""What a chunk of a bulk job locks and reads before it judges: the claim rows of its items,
then (where it moves a workflow's status or claims a workflow never claimed) their workflow
rows, the order every fenced write takes. SKIP LOCKED passes over a row another writer
holds: the chunk leaves that item pending for a later sweep instead of waiting inside a
lock an engine needs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import (
    BooleanField,
    CharField,
    ExpressionWrapper,
    F,
    OuterRef,
    QuerySet,
    Subquery,
    Value,
)

from claims.models import Workflow, WorkflowClaim
from claims.models.any_of import AnyOf
from claims.models.claims import HOLDER_PRESENT


@dataclass(frozen=True)
class LockedClaim:
    epoch: int
    held: bool
    workflow_status: str | None  # None: the workflow row is gone


@dataclass(frozen=True)
class LockedWorkflow:
    status: str
    workflow_type: str | None  # read where the job moves the workflow's status (its index row)


def locked_claims_query(ids: list[str], *, with_status: bool) -> QuerySet[WorkflowClaim, Any]:
    """The locking read of the claim rows of ``ids``, in workflow id order (the order every
    fenced write takes), SKIP LOCKED: (workflow_id, epoch, held, workflow_status), the
    status read here unless the chunk locks the workflow rows and reads it there."""
    status: Any = Value(None, output_field=CharField())
    if with_status:
        status = Subquery(
            Workflow.objects.filter(workflow_id=OuterRef("workflow_id")).values("status")[:1]
        )
    return (
        WorkflowClaim.objects.select_for_update(no_key=True, skip_locked=True, of=("self",))
        .filter(AnyOf(F("workflow_id"), ids))
        .order_by("workflow_id")
        .annotate(
            held=ExpressionWrapper(HOLDER_PRESENT, output_field=BooleanField()),
            workflow_status=status,
        )
        .values_list("workflow_id", "epoch", "held", "workflow_status")
    )


def lock_claims(ids: list[str], *, with_status: bool) -> tuple[dict[str, LockedClaim], set[str]]:
    """The claim rows of ``ids`` this chunk could lock, and the ids of rows another writer
    holds (they exist, but SKIP LOCKED passed them over)."""
    locked = {
        workflow_id: LockedClaim(epoch, held, status)
        for workflow_id, epoch, held, status in locked_claims_query(ids, with_status=with_status)
    }
    return locked, _existing(WorkflowClaim, [i for i in ids if i not in locked])


def _existing(model: type[WorkflowClaim] | type[Workflow], ids: list[str]) -> set[str]:
    """Which of ``ids`` (rows a lock passed over) have a row: those another writer holds."""
    if not ids:
        return set()
    return set(model.objects.filter(workflow_id__in=ids).values_list("workflow_id", flat=True))


def read_workflows(ids: list[str], claims: dict[str, LockedClaim]) -> dict[str, LockedWorkflow]:
    """The workflows of ``ids``: read with their locked claims, and for the few without a
    claim row (never claimed), read here."""
    workflows = {
        workflow_id: LockedWorkflow(claim.workflow_status, None)
        for workflow_id, claim in claims.items()
        if claim.workflow_status is not None
    }
    unclaimed = [workflow_id for workflow_id in ids if workflow_id not in claims]
    if unclaimed:
        for workflow_id, status in Workflow.objects.filter(workflow_id__in=unclaimed).values_list(
            "workflow_id", "status"
        ):
            workflows[workflow_id] = LockedWorkflow(status, None)
    return workflows


def lock_workflows(ids: list[str]) -> tuple[dict[str, LockedWorkflow], set[str]]:
    locked = {
        workflow_id: LockedWorkflow(status, workflow_type)
        for workflow_id, status, workflow_type in Workflow.objects.select_for_update(
            skip_locked=True
        )
        .filter(AnyOf(F("workflow_id"), ids))
        .order_by("workflow_id")
        .values_list("workflow_id", "status", "workflow_type")
    }
    return locked, _existing(Workflow, [i for i in ids if i not in locked])
