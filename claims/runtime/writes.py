"""The runtime's own writes to Workflow; each runs inside a fenced transaction of the registry.

They stay here, not in claims.services: an engine makes them under its claim's fence, for
the workflow it drives, where the services are what an operator or a program asks for.
Both bring the index row in line through claims.store.workflows.workflow_index, which
sits below them, so the runtime never imports the services.

Both are conditional on the workflow still running: a row that stopped running
without its claim rotating is not this engine's to write, and the fence's
transaction rolls back with EngineDeposedError.
"""

from __future__ import annotations

from typing import Any

from claims.models import Workflow, WorkflowStatus
from claims.models.parks import due_at_of
from claims.protocol.errors import EngineDeposedError
from claims.store.workflows import workflow_index


def workflow_checkpoint_write(workflow_id: str, *, state: dict[str, Any], now_ms: int) -> None:
    """Store a running workflow's new state, and when its next drive is due by it (a park's
    wake time, else a recheck after now). Caller is inside ``registry.fenced_write``."""
    updated = Workflow.objects.filter(
        workflow_id=workflow_id, status=WorkflowStatus.RUNNING
    ).update(state=state, due_at_ms=due_at_of(state, written_at_ms=now_ms), updated_at_ms=now_ms)
    if updated != 1:
        raise EngineDeposedError(workflow_id)


def workflow_terminal_write(
    workflow_id: str,
    *,
    workflow_type: str,
    status: WorkflowStatus,
    state: dict[str, Any],
    now_ms: int,
    failure: dict[str, Any] | None = None,
) -> None:
    """Complete or fail a running workflow and its index row. Caller is inside
    ``registry.finish``, which releases the claim in the same transaction, so a failure
    record (claims.runtime.failures) is stored exactly when the workflow fails."""
    updated = Workflow.objects.filter(
        workflow_id=workflow_id, status=WorkflowStatus.RUNNING
    ).update(status=status, state=state, updated_at_ms=now_ms, failure=failure)
    if updated != 1:
        raise EngineDeposedError(workflow_id)
    workflow_index(
        Workflow(
            workflow_id=workflow_id,
            workflow_type=workflow_type,
            status=status,
            updated_at_ms=now_ms,
        )
    )
