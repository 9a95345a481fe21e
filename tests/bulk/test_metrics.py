"""/metrics counts bulk job items by action and outcome, and jobs by status."""

from __future__ import annotations

import pytest

from claims.bulk import BulkHooks, bulk_run
from claims.models import WorkflowClaim
from claims.selectors import fleet_metrics
from claims.services.bulk import BulkRequest, bulk_job_create

from .conftest import make_fleet

pytestmark = pytest.mark.django_db


def test_items_are_counted_by_action_and_outcome_and_jobs_by_status():
    make_fleet(4)
    job = bulk_job_create(BulkRequest("claims", 'engine = "e-1"', "release", "r"), actor="a")
    WorkflowClaim.objects.filter(workflow_id="wf-00").update(epoch=9)
    bulk_run(job.pk, hooks=BulkHooks(between_chunks=lambda *a: None))
    bulk_job_create(BulkRequest("claims", "epoch = 9", "release", "r"), actor="a")

    fleet = fleet_metrics()

    assert fleet.bulk_items == {
        ("release", "done"): 3,
        ("release", "moved"): 1,
        ("release", "refused"): 0,
    }
    assert fleet.bulk_jobs_by_status == {"done": 1, "queued": 1}
