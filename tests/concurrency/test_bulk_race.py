"""A bulk job running beside engines that renew and acquire on the same database: the
engines see no errors, the job acts on each item once, and nothing else moves."""

from __future__ import annotations

import threading
import time
from unittest import mock

import pytest
from django.db import connection

import claims.services.bulk as bulk_services
from claims.bulk import BulkHooks, bulk_run
from claims.models import BulkJob, ClaimEvent, WorkflowClaim
from claims.protocol import ClaimRegistry, ClaimTiming
from claims.protocol.testing import FakeClock
from claims.services.bulk import BulkRequest, bulk_job_create
from claims.store import OrmClaimStore
from tests import factories

START_MS = 1_700_000_000_000
ENGINES = 4
CLAIMS_EACH = 40

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(180),
    pytest.mark.django_db(transaction=True),
]


def _ids(engine: int, count: int = CLAIMS_EACH) -> list[str]:
    return [f"bulk-{engine}-{n:03d}" for n in range(count)]


def test_a_release_job_beside_renewing_engines_acts_once_and_they_see_no_errors():
    clock = FakeClock(START_MS)
    timing = ClaimTiming(ttl_ms=600_000, renew_interval_ms=200_000)
    registries = [
        ClaimRegistry(OrmClaimStore(), engine_id=f"engine-{n}", clock=clock, timing=timing)
        for n in range(ENGINES)
    ]
    for n, registry in enumerate(registries):
        for workflow_id in _ids(n) + _ids(n, CLAIMS_EACH + 10)[CLAIMS_EACH:]:
            factories.make_workflow(workflow_id)
        results = registry.acquire_many(_ids(n))
        assert {r.status for r in results.values()} == {"acquired"}
    job = bulk_job_create(
        BulkRequest("claims", 'engine = "engine-0"', "release", "engine-0 is wedged"),
        actor="alice",
    )
    before = dict(WorkflowClaim.objects.values_list("workflow_id", "epoch"))
    stop = threading.Event()
    errors: list[BaseException] = []
    renewals = [0] * ENGINES

    def engine(n: int) -> None:
        registry = registries[n]
        late = _ids(n, CLAIMS_EACH + 10)[CLAIMS_EACH:]
        try:
            # Until stopped, and until each has acquired its late ones: on a loaded machine
            # a job may end before an engine came round ten times.
            while not stop.is_set() or late:
                registry.renew_all()
                renewals[n] += 1
                if late:
                    registry.acquire(late.pop())
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    def run_job() -> None:
        try:
            bulk_run(job.pk, chunk_size=7, hooks=BulkHooks(between_chunks=lambda *a: None))
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=engine, args=(n,)) for n in range(ENGINES)]
    for thread in threads:
        thread.start()
    time.sleep(0.2)
    runner = threading.Thread(target=run_job)
    runner.start()
    runner.join(timeout=120)
    time.sleep(0.2)  # the engines renew on past the job's end too
    stop.set()
    for thread in threads:
        thread.join(timeout=60)

    assert errors == []
    assert min(renewals) > 1
    job = BulkJob.objects.get(pk=job.pk)
    assert (job.status, job.done_count, job.moved_count, job.refused_count) == (
        "done",
        CLAIMS_EACH,
        0,
        0,
    )
    released = ClaimEvent.objects.filter(kind="forced_release", bulk_job_id=job.pk)
    assert sorted(released.values_list("workflow_id", flat=True)) == _ids(0)
    after = dict(WorkflowClaim.objects.values_list("workflow_id", "epoch"))
    for workflow_id, epoch in before.items():
        assert after[workflow_id] == epoch + (1 if workflow_id.startswith("bulk-0-") else 0)
    held = WorkflowClaim.objects.filter(holder_engine_id__isnull=False)
    assert not held.filter(workflow_id__in=_ids(0)).exists()
    for n in range(1, ENGINES):
        assert held.filter(holder_engine_id=f"engine-{n}").count() == CLAIMS_EACH + 10


def test_an_item_locked_by_another_writer_is_swept_again_not_waited_on():
    """PostgreSQL: a claim row another transaction holds is skipped, and acted on by a
    later sweep once that transaction ends."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks are PostgreSQL's; SQLite has one writer at a time")
    for n in range(5):
        factories.make_workflow(f"wf-{n}")
        factories.make_claim(f"wf-{n}", epoch=2, engine="e-1")
    job = bulk_job_create(BulkRequest("claims", 'engine = "e-1"', "release", "r"), actor="a")
    locked, release_lock = threading.Event(), threading.Event()

    def hold_row() -> None:
        from django.db import transaction

        try:
            with transaction.atomic():
                WorkflowClaim.objects.select_for_update().get(workflow_id="wf-2")
                locked.set()
                release_lock.wait(timeout=30)
        finally:
            connection.close()

    holder = threading.Thread(target=hold_row)
    holder.start()
    assert locked.wait(timeout=10)
    chunks: list[int] = []

    def count_chunk(job, number, items):
        chunks.append(len(items))
        if len(chunks) == 2:
            release_lock.set()  # the first sweep has passed wf-2 by

    done = bulk_run(job.pk, hooks=BulkHooks(after_lock=count_chunk, between_chunks=lambda *a: 0))
    holder.join(timeout=30)

    assert chunks[:2] == [5, 1]
    assert (done.status, done.done_count) == ("done", 5)
    assert WorkflowClaim.objects.get(workflow_id="wf-2").epoch == 3


@pytest.mark.django_db(transaction=True)
def test_the_same_request_key_sent_twice_at_once_makes_one_job():
    """Two requests with one key race past the look for an earlier job: the constraint
    lets one insert through, and the other returns the job it made."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite has one writer at a time: the requests cannot overlap")
    for n in range(5):
        factories.make_workflow(f"wf-{n}")
        factories.make_claim(f"wf-{n}", epoch=2, engine="e-1")
    barrier = threading.Barrier(2)
    jobs: list[int] = []
    errors: list[BaseException] = []
    real_create = bulk_services._create

    def create_after_both_looked(*args, **kwargs):
        barrier.wait(timeout=10)
        return real_create(*args, **kwargs)

    def send() -> None:
        try:
            request = BulkRequest("claims", 'engine = "e-1"', "release", "r", request_key="k")
            jobs.append(bulk_job_create(request, actor="alice").pk)
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    with mock.patch.object(bulk_services, "_create", create_after_both_looked):
        threads = [threading.Thread(target=send) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)

    assert errors == []
    assert len(jobs) == 2
    assert jobs[0] == jobs[1]
    assert BulkJob.objects.count() == 1
