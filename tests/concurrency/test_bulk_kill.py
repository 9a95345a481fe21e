"""A bulk job whose runner process is SIGKILLed mid-run resumes from its cursor and acts
on every item exactly once."""

from __future__ import annotations

import multiprocessing
import time

import pytest
from django.db import connection

from claims.bulk import bulk_run_due
from claims.models import BulkJob, ClaimEvent, WorkflowClaim
from claims.services.bulk import BulkRequest, bulk_job_create
from tests import factories
from tests.integration._fleet import database_url

from ._bulk_child import run_job

ITEMS = 60


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.timeout(120)
@pytest.mark.django_db(transaction=True)
def test_a_runner_killed_mid_run_is_resumed_and_acts_on_each_item_once():
    if connection.vendor != "postgresql":
        pytest.skip("the runner process reaches the test database by URL: PostgreSQL")
    ids = [f"wf-{n:03d}" for n in range(ITEMS)]
    for workflow_id in ids:
        factories.make_workflow(workflow_id)
        factories.make_claim(workflow_id, epoch=5, engine="e-1")
    # Paced at 40 items a second in chunks of 4, the run takes a second and a half.
    job = bulk_job_create(
        BulkRequest("claims", 'engine = "e-1"', "release", "incident", rate_per_s=40),
        actor="alice",
    )
    context = multiprocessing.get_context("spawn")
    runner = context.Process(
        target=run_job, args=(database_url(connection.settings_dict), job.pk, 4), name="runner"
    )
    runner.start()
    try:
        deadline = time.monotonic() + 60
        while BulkJob.objects.get(pk=job.pk).done_count < 12:
            assert runner.is_alive(), f"the runner ended early ({runner.exitcode})"
            assert time.monotonic() < deadline, "the runner never got going"
            time.sleep(0.02)
        runner.kill()
    finally:
        runner.join(timeout=30)
    killed = BulkJob.objects.get(pk=job.pk)
    assert killed.status == "running"
    assert 12 <= killed.done_count < ITEMS

    resumed = bulk_run_due()

    assert resumed is not None
    assert (resumed.status, resumed.done_count, resumed.moved_count) == ("done", ITEMS, 0)
    events = ClaimEvent.objects.filter(bulk_job_id=job.pk)
    assert sorted(events.values_list("workflow_id", flat=True)) == ids
    assert set(WorkflowClaim.objects.values_list("epoch", "holder_engine_id")) == {(6, None)}
