"""bulk_run: each item fenced on its frozen epoch, a chunk per transaction, resumable from
its cursor, pausable and abortable between chunks."""

from __future__ import annotations

from dataclasses import replace
from unittest import mock

import pytest
from django.conf import settings
from django.db import OperationalError, connection, transaction

from claims import tasks
from claims.bulk import BulkHooks, bulk_run, bulk_run_due, chunk_set, runner
from claims.models import (
    BulkJob,
    ClaimEvent,
    Workflow,
    WorkflowClaim,
    WorkflowVisibility,
)
from claims.services.bulk import BulkRequest, bulk_job_abort, bulk_job_create, bulk_job_pause
from tests import factories

from .conftest import make_fleet, make_mixed

pytestmark = pytest.mark.django_db

NO_PAUSE = BulkHooks(between_chunks=lambda *args: None)
# On PostgreSQL a release or a takeover chunk of claimed workflows is one statement
# (claims.bulk.chunk_set): every test here runs again there on the row-by-row path the
# other chunks take, so the two are held to the same outcomes. SQLite has that path only.
CHUNK_PATHS = (
    ("as-built", "row-by-row")
    if "postgresql" in settings.DATABASES["default"]["ENGINE"]
    else ("as-built",)
)


@pytest.fixture(autouse=True, params=CHUNK_PATHS)
def chunk_path(request, monkeypatch):
    if request.param == "row-by-row":
        monkeypatch.setattr(chunk_set, "applies", lambda *args: False)


class SimulatedKill(BaseException):
    """A worker killed mid-chunk: not an Exception, so nothing records it as a failure."""


def create(action: str = "release", query: str = 'engine = "e-1"', **fields) -> BulkJob:
    return bulk_job_create(
        BulkRequest(
            list_name=fields.pop("list_name", "claims"),
            query=query,
            action=action,
            reason="incident 42",
            **fields,
        ),
        actor="alice",
    )


def outcomes(job: BulkJob) -> dict[str, tuple[str, int | None, str]]:
    return {
        workflow_id: (outcome, epoch_after, detail)
        for workflow_id, outcome, epoch_after, detail in job.items.values_list(
            "workflow_id", "outcome", "epoch_after", "detail"
        )
    }


def test_a_release_moves_every_claim_one_epoch_on_with_no_holder():
    ids = make_fleet(5, epoch=3)
    job = create()

    job = bulk_run(job.pk, chunk_size=2, hooks=NO_PAUSE)

    assert (job.status, job.done_count, job.moved_count, job.refused_count) == ("done", 5, 0, 0)
    assert job.finished_at_ms is not None
    assert set(WorkflowClaim.objects.values_list("epoch", "holder_engine_id")) == {(4, None)}
    events = ClaimEvent.objects.order_by("workflow_id")
    assert list(events.values_list("workflow_id", "kind", "epoch_before", "epoch_after")) == [
        (workflow_id, "forced_release", 3, 4) for workflow_id in ids
    ]
    assert set(events.values_list("bulk_job_id", "actor", "reason")) == {
        (job.pk, "alice", "incident 42")
    }
    assert set(outcomes(job).values()) == {("done", 4, "")}


def test_an_item_that_moved_since_the_freeze_is_left_alone():
    make_fleet(3, epoch=3)
    job = create()
    WorkflowClaim.objects.filter(workflow_id="wf-01").update(epoch=5, holder_epoch=5)

    job = bulk_run(job.pk, hooks=NO_PAUSE)

    assert (job.done_count, job.moved_count) == (2, 1)
    assert outcomes(job)["wf-01"] == ("moved", None, "at epoch 5 now")
    assert WorkflowClaim.objects.get(workflow_id="wf-01").holder_engine_id == "e-1"
    assert not ClaimEvent.objects.filter(workflow_id="wf-01").exists()


def test_the_rules_refuse_an_item_at_its_frozen_epoch():
    make_mixed()
    job = create(query='id STARTS_WITH "wf-"')

    job = bulk_run(job.pk, hooks=NO_PAUSE)

    seen = outcomes(job)
    assert seen["wf-held"] == ("done", 3, "")
    assert seen["wf-free"] == ("refused", None, "ownerless: there is no holder to release")
    assert seen["wf-gone"] == ("refused", None, "the workflow row is gone")
    assert (job.done_count, job.refused_count) == (1, 4)
    assert WorkflowClaim.objects.get(workflow_id="wf-free").epoch == 5


@pytest.mark.parametrize(
    ("action", "query", "before", "after"),
    [
        ("cancel", 'status = "running"', "running", "cancelled"),
        ("suspend", 'status = "running"', "running", "suspended"),
        ("resume", 'status = "suspended"', "suspended", "running"),
    ],
)
def test_a_transition_moves_the_workflows_and_their_index(action, query, before, after):
    for n in range(3):
        factories.make_workflow(f"wf-{n}", status=before)
        factories.make_claim(f"wf-{n}", epoch=2, engine="e-1" if before == "running" else None)
    WorkflowVisibility.objects.create(
        workflow_id="wf-0", status=before, workflow_type="order", updated_at_ms=1
    )
    job = create(action, query, list_name="workflows")

    job = bulk_run(job.pk, chunk_size=2, hooks=NO_PAUSE)

    assert job.done_count == 3
    assert set(Workflow.objects.values_list("status", flat=True)) == {after}
    assert set(WorkflowVisibility.objects.values_list("workflow_id", "status")) == {
        (f"wf-{n}", after) for n in range(3)
    }
    assert set(WorkflowClaim.objects.values_list("epoch", "holder_engine_id")) == {(3, None)}
    assert set(ClaimEvent.objects.values_list("kind", flat=True)) == {"rotated"}


def test_a_workflow_never_claimed_gets_its_first_claim_row():
    make_mixed()
    job = create("cancel", 'id = "wf-new"', list_name="workflows")

    job = bulk_run(job.pk, hooks=NO_PAUSE)

    assert outcomes(job)["wf-new"] == ("done", 1, "")
    claim = WorkflowClaim.objects.get(workflow_id="wf-new")
    assert (claim.epoch, claim.holder_engine_id) == (1, None)
    assert Workflow.objects.get(workflow_id="wf-new").status == "cancelled"


def test_a_takeover_spreads_over_live_engines_with_one_adopt_per_engine_per_chunk(
    django_capture_on_commit_callbacks,
):
    sent_adopts: list[dict[str, list[tuple[str, int]]]] = []
    make_fleet(6, epoch=2)
    factories.make_engine("e-2")
    factories.make_engine("e-3")
    factories.make_engine("e-4", drain_requested_at_ms=1)
    factories.make_engine("e-5", status="dead")
    job = create("takeover")

    with django_capture_on_commit_callbacks(execute=True):
        job = bulk_run(
            job.pk, chunk_size=4, hooks=replace(NO_PAUSE, send_adopts=sent_adopts.append)
        )

    assert job.done_count == 6
    holders = dict(WorkflowClaim.objects.values_list("workflow_id", "holder_engine_id"))
    assert sorted(holders.values()) == ["e-2", "e-2", "e-2", "e-3", "e-3", "e-3"]
    claim = WorkflowClaim.objects.get(workflow_id="wf-00")
    assert (claim.epoch, claim.holder_epoch) == (3, 3)
    assert claim.holder_expires_at_ms > claim.holder_claimed_at_ms
    assert sent_adopts == [
        {"engine.e-2": [("wf-00", 3), ("wf-02", 3)], "engine.e-3": [("wf-01", 3), ("wf-03", 3)]},
        {"engine.e-2": [("wf-04", 3)], "engine.e-3": [("wf-05", 3)]},
    ]
    assert set(ClaimEvent.objects.values_list("kind", flat=True)) == {"forced_takeover"}


def test_a_takeover_spreads_over_the_engines_heard_from_lately():
    """An engine killed a moment ago is active until beat marks it dead: a claim handed to
    it would wait out a TTL and the grace before anyone drives it."""
    make_fleet(4, epoch=2)
    factories.make_engine("e-2")
    factories.make_engine("e-3", heard_ago_ms=60_000)
    job = bulk_run(create("takeover").pk, hooks=NO_PAUSE)

    assert job.done_count == 4
    holders = WorkflowClaim.objects.values_list("holder_engine_id", flat=True)
    assert sorted(holders) == ["e-2"] * 4


def test_with_no_engine_heard_from_lately_a_takeover_spreads_over_every_active_one():
    make_fleet(4, epoch=2)
    factories.make_engine("e-2", heard_ago_ms=60_000)
    factories.make_engine("e-3", heard_ago_ms=60_000)
    job = bulk_run(create("takeover").pk, hooks=NO_PAUSE)

    assert job.done_count == 4
    holders = WorkflowClaim.objects.values_list("holder_engine_id", flat=True)
    assert sorted(holders) == ["e-2", "e-2", "e-3", "e-3"]


def test_a_takeover_to_an_engine_that_died_since_is_refused_item_by_item():
    make_fleet(2)
    factories.make_engine("e-2")
    job = create("takeover", target_engine_id="e-2")
    factories.Engine.objects.filter(engine_id="e-2").update(status="dead")

    job = bulk_run(job.pk, hooks=NO_PAUSE)

    assert job.refused_count == 2
    assert set(outcomes(job).values()) == {
        ("refused", None, "engine e-2 is not live, or is draining")
    }


def test_a_run_killed_mid_chunk_resumes_and_acts_on_each_item_once():
    ids = make_fleet(7, epoch=1)
    job = create()

    def kill_in_chunk_three(job, number):
        if number == 3:
            raise SimulatedKill

    with pytest.raises(SimulatedKill):
        bulk_run(
            job.pk,
            chunk_size=2,
            hooks=BulkHooks(before_commit=kill_in_chunk_three, between_chunks=lambda *a: None),
        )
    killed = BulkJob.objects.get(pk=job.pk)
    assert (killed.status, killed.done_count) == ("running", 4)

    resumed = bulk_run_due(hooks=NO_PAUSE)

    assert (resumed.pk, resumed.status, resumed.done_count) == (job.pk, "done", 7)
    for workflow_id in ids:
        assert ClaimEvent.objects.filter(workflow_id=workflow_id).count() == 1
    assert set(WorkflowClaim.objects.values_list("epoch", flat=True)) == {2}


@pytest.mark.django_db(transaction=True)
def test_a_sweep_that_lost_its_connection_is_tried_again_and_the_job_ends_done(monkeypatch):
    """The end-of-walk sweep is a transaction like a chunk: a connection cut under it is
    no reason to fail a job whose every item was acted on."""
    monkeypatch.setattr(runner, "RETRY_PAUSE_S", 0.0)
    make_fleet(3, epoch=1)
    job = create()
    real_sweep = runner._sweep_again
    calls: list[int] = []

    def cut_once(job_id: int, sweeps: int) -> bool:
        calls.append(sweeps)
        if len(calls) == 1:
            raise OperationalError("server closed the connection unexpectedly")
        return real_sweep(job_id, sweeps)

    monkeypatch.setattr(runner, "_sweep_again", cut_once)

    ran = bulk_run(job.pk, hooks=NO_PAUSE)

    assert (ran.status, ran.done_count) == ("done", 3)
    assert len(calls) == 2


@pytest.mark.django_db(transaction=True)
def test_a_chunk_that_committed_but_lost_its_answer_is_not_acted_on_again(monkeypatch):
    monkeypatch.setattr(runner, "RETRY_PAUSE_S", 0.0)
    ids = make_fleet(6, epoch=1)
    job = create()

    def lose_the_answer():
        # The commit went through; then the connection broke before the runner heard.
        connection.connection.close()
        raise OperationalError("server closed the connection unexpectedly")

    def after_chunk_two(job, number):
        if number == 2:
            transaction.on_commit(lose_the_answer)

    ran = bulk_run(
        job.pk,
        chunk_size=2,
        hooks=BulkHooks(before_commit=after_chunk_two, between_chunks=lambda *a: None),
    )

    assert (ran.status, ran.done_count, ran.moved_count) == ("done", 6, 0)
    for workflow_id in ids:
        assert ClaimEvent.objects.filter(workflow_id=workflow_id).count() == 1
    assert set(WorkflowClaim.objects.values_list("epoch", flat=True)) == {2}


def test_an_error_fails_the_job_with_it():
    make_fleet(3)
    job = create()

    def explode(job, number):
        raise ValueError("the disk is full")

    job = bulk_run(job.pk, hooks=BulkHooks(before_commit=explode))

    assert (job.status, job.error) == ("failed", "ValueError: the disk is full")
    assert job.done_count == 0
    assert set(WorkflowClaim.objects.values_list("epoch", flat=True)) == {3}


def test_a_pause_between_chunks_stops_the_run_and_an_abort_leaves_the_rest():
    make_fleet(6)
    job = create()

    def pause_after_first(job, seconds, acted):
        bulk_job_pause(job.pk, actor="bob")

    paused = bulk_run(job.pk, chunk_size=2, hooks=BulkHooks(between_chunks=pause_after_first))
    assert (paused.status, paused.done_count) == ("paused", 2)
    assert bulk_run(job.pk, hooks=NO_PAUSE).status == "paused"  # a paused job is left alone

    aborted = bulk_job_abort(job.pk, actor="bob")

    assert (aborted.status, aborted.done_count) == ("aborted", 2)
    assert job.items.filter(outcome="pending").count() == 4
    assert WorkflowClaim.objects.filter(holder_engine_id="e-1").count() == 4


def test_two_jobs_over_the_same_workflows_act_on_each_once():
    make_fleet(4, epoch=2)
    first = create()
    second = create()

    first = bulk_run(first.pk, hooks=NO_PAUSE)
    second = bulk_run(second.pk, hooks=NO_PAUSE)

    assert (first.done_count, second.moved_count, second.done_count) == (4, 4, 0)
    assert ClaimEvent.objects.count() == 4


def test_a_rate_cap_bounds_each_chunk():
    make_fleet(5)
    job = create(rate_per_s=2)
    sizes: list[int] = []

    bulk_run(
        job.pk,
        hooks=BulkHooks(
            after_lock=lambda job, number, items: sizes.append(len(items)),
            between_chunks=lambda *args: None,
        ),
    )

    assert sizes == [2, 2, 1]


def test_the_celery_task_sends_each_engine_its_adopt_message_once_the_chunk_committed(
    django_capture_on_commit_callbacks,
):
    make_fleet(2, epoch=2)
    factories.make_engine("e-2")
    job = create("takeover", target_engine_id="e-2")

    with (
        mock.patch("claims.tasks.adopt_many.apply_async") as send,
        django_capture_on_commit_callbacks(execute=True),
    ):
        assert tasks.bulk_run(job.pk) == "done"

    send.assert_called_once_with(
        args=([("wf-00", 3), ("wf-01", 3)],), queue="engine.e-2", retry=False
    )
