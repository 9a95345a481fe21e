"""Overview counts: one query each, whatever the number of rows."""

from __future__ import annotations

import pytest

from claims import selectors
from claims.models import Workflow, WorkflowClaim
from claims.selectors import ClaimHolderCounts

pytestmark = pytest.mark.django_db

NOW_MS = 1_700_000_000_000


def make_workflow(workflow_id: str, status: str) -> None:
    Workflow.objects.create(
        workflow_id=workflow_id,
        workflow_type="demo",
        status=status,
        state={},
        created_at_ms=NOW_MS,
        updated_at_ms=NOW_MS,
    )


def test_workflow_status_counts_groups_by_status_in_one_query(django_assert_num_queries):
    """Each present status is counted once; absent statuses are left out."""
    for index in range(3):
        make_workflow(f"wf-running-{index}", "running")
    make_workflow("wf-done", "completed")

    with django_assert_num_queries(1):
        counts = selectors.workflow_status_counts()

    assert counts == {"completed": 1, "running": 3}


def test_workflow_status_counts_is_empty_without_workflows():
    """No workflows means an empty mapping, not zeros."""
    assert selectors.workflow_status_counts() == {}


def test_claim_holder_counts_splits_held_from_ownerless_in_one_query(django_assert_num_queries):
    """A row with a holder is held, expired or not; a row without one is ownerless."""
    WorkflowClaim.objects.create(
        workflow_id="wf-held",
        epoch=2,
        holder_engine_id="engine-a",
        holder_epoch=2,
        holder_expires_at_ms=NOW_MS + 30_000,
        holder_claimed_at_ms=NOW_MS,
    )
    WorkflowClaim.objects.create(
        workflow_id="wf-expired",
        epoch=1,
        holder_engine_id="engine-b",
        holder_epoch=1,
        holder_expires_at_ms=NOW_MS - 60_000,
        holder_claimed_at_ms=NOW_MS - 90_000,
    )
    WorkflowClaim.objects.create(workflow_id="wf-released", epoch=3)

    with django_assert_num_queries(1):
        counts = selectors.claim_holder_counts()

    assert counts == ClaimHolderCounts(held=2, ownerless=1)
