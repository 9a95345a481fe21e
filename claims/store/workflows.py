"""The workflows and their visibility index: what the engine passes read of them, and
the one write that brings an index row in line with its workflow.

The index write lives here, below both of its writers: the services (a start, an
operator's cancel or suspend) and the runtime's terminal write under an engine's fence.
"""

from __future__ import annotations

from collections.abc import Sequence

from claims.models import Workflow, WorkflowClaim, WorkflowVisibility
from claims.protocol.errors import WorkflowNotFoundError
from claims.protocol.records import WorkflowInfo

from .claim_sets import CHUNK


def lock_claim_then_workflow(workflow_id: str) -> tuple[Workflow, int | None]:
    """Lock in the order fenced writes do (claim row, then workflow row), so a write from
    outside the engine (a transition, a forced takeover) never deadlocks with an engine's
    checkpoint and sees any finish that committed while it waited; returns the workflow
    and the claim's epoch (None without a claim row). Caller holds the transaction."""
    epochs = list(
        WorkflowClaim.objects.select_for_update(no_key=True)
        .filter(workflow_id=workflow_id)
        .values_list("epoch", flat=True)
    )
    workflow = Workflow.objects.select_for_update().filter(workflow_id=workflow_id).first()
    if workflow is None:
        raise WorkflowNotFoundError(workflow_id)
    return workflow, (epochs[0] if epochs else None)


def workflow_index(workflow: Workflow) -> None:
    """Bring the visibility row in line with the workflow; caller holds the transaction."""
    WorkflowVisibility.objects.update_or_create(
        workflow_id=workflow.workflow_id,
        defaults={
            "status": workflow.status,
            "workflow_type": workflow.workflow_type,
            "updated_at_ms": workflow.updated_at_ms,
        },
    )


class WorkflowQueries:
    def read_workflow(self, workflow_id: str) -> WorkflowInfo | None:
        values = (
            Workflow.objects.filter(workflow_id=workflow_id)
            .values_list("status", "workflow_type")
            .first()
        )
        return None if values is None else WorkflowInfo(workflow_id, *values)

    def read_workflows(self, workflow_ids: Sequence[str]) -> dict[str, WorkflowInfo]:
        infos: dict[str, WorkflowInfo] = {}
        for start in range(0, len(workflow_ids), CHUNK):
            chunk = workflow_ids[start : start + CHUNK]
            for workflow_id, status, workflow_type in Workflow.objects.filter(
                workflow_id__in=chunk
            ).values_list("workflow_id", "status", "workflow_type"):
                infos[workflow_id] = WorkflowInfo(workflow_id, status, workflow_type)
        return infos
