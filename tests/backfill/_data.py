"""Arranging workflows and index rows the way a bulk import leaves them."""

from __future__ import annotations

from claims.backfill.jobs import ms_to_datetime
from claims.models import BackfillJob, BackfillStatus, Workflow, WorkflowVisibility
from claims.protocol.testing import FakeClock

START_MS = 1_700_000_000_000
START_AT = ms_to_datetime(START_MS)
TYPES = ("order", "invoice", "refund")
STATUSES = ("running", "completed", "failed", "pending")


def clock() -> FakeClock:
    return FakeClock(START_MS)


def workflow_ids(count: int, prefix: str = "wf-") -> list[str]:
    return [f"{prefix}{n:05d}" for n in range(count)]


def import_workflows(ids: list[str], *, indexed: bool = False) -> list[Workflow]:
    """Workflows as an import writes them: with no index rows unless ``indexed``."""
    workflows = Workflow.objects.bulk_create(
        Workflow(
            workflow_id=workflow_id,
            workflow_type=TYPES[n % len(TYPES)],
            status=STATUSES[n % len(STATUSES)],
            state={},
            created_at_ms=START_MS - 10_000 + n,
            updated_at_ms=START_MS - 5_000 + n,
        )
        for n, workflow_id in enumerate(ids)
    )
    if indexed:
        WorkflowVisibility.objects.bulk_create(
            WorkflowVisibility(
                workflow_id=w.workflow_id,
                status=w.status,
                workflow_type=w.workflow_type,
                updated_at_ms=w.updated_at_ms,
            )
            for w in workflows
        )
    return workflows


_FIELDS = ("workflow_id", "status", "workflow_type", "updated_at_ms")


def _snapshot(queryset) -> dict[str, tuple[str, str, int]]:
    return {values[0]: tuple(values[1:]) for values in queryset.values_list(*_FIELDS)}


def index_snapshot() -> dict[str, tuple[str, str, int]]:
    return _snapshot(WorkflowVisibility.objects.all())


def workflow_snapshot() -> dict[str, tuple[str, str, int]]:
    return _snapshot(Workflow.objects.all())


def running_job(**fields: object) -> BackfillJob:
    defaults: dict[str, object] = {
        "status": BackfillStatus.RUNNING,
        "requested_by": "alice",
        "run_at": START_AT,
    }
    defaults.update(fields)
    return BackfillJob.objects.create(**defaults)
