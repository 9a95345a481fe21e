"""The one-statement chunk on PostgreSQL (claims.bulk.chunk_set): which chunks take it, and
that its judgement and writes are the row-by-row path's (tests/bulk/test_run.py runs every
run test on both paths; these are the cases only this path has to get right)."""

from __future__ import annotations

import pytest
from django.conf import settings

from claims.bulk import BulkHooks, bulk_run, chunk_set
from claims.bulk.actions import refusal
from claims.fleet_clock import fleet_now
from claims.models import BulkJob, ClaimEvent, Workflow, WorkflowClaim, WorkflowStatus
from claims.services.bulk import BulkRequest, bulk_job_create
from tests import factories

from .conftest import make_fleet, make_mixed

POSTGRES = "postgresql" in settings.DATABASES["default"]["ENGINE"]
NO_PAUSE = BulkHooks(between_chunks=lambda *args: None)
on_postgres = pytest.mark.skipif(not POSTGRES, reason="SQLite takes the row-by-row path only")


@pytest.fixture
def statements(monkeypatch) -> list[int]:
    """How many items each one-statement chunk was handed."""
    taken: list[int] = []
    act = chunk_set.act_in_one_statement

    def counted(job, items, *args, **kwargs):
        taken.append(len(items))
        return act(job, items, *args, **kwargs)

    monkeypatch.setattr(chunk_set, "act_in_one_statement", counted)
    return taken


def create(action: str, query: str, **fields) -> BulkJob:
    return bulk_job_create(
        BulkRequest(fields.pop("list_name", "claims"), query, action, "incident 7", **fields),
        actor="alice",
    )


def outcomes(job: BulkJob) -> dict[str, tuple[str, int | None, str]]:
    return {
        workflow_id: (outcome, epoch_after, detail)
        for workflow_id, outcome, epoch_after, detail in job.items.values_list(
            "workflow_id", "outcome", "epoch_after", "detail"
        )
    }


@pytest.mark.parametrize("action", ["release", "takeover"])
@pytest.mark.parametrize("held", [True, False])
def test_a_status_no_code_writes_is_judged_as_a_running_one(action, held):
    # The statement is handed the rules of the known statuses and maps any other to running.
    assert refusal(action, "archived", held) == refusal(action, WorkflowStatus.RUNNING, held)


@on_postgres
@pytest.mark.django_db
def test_a_release_of_claimed_workflows_takes_one_statement_a_chunk(statements):
    make_fleet(5, epoch=3)
    job = create("release", 'engine = "e-1"')

    job = bulk_run(job.pk, chunk_size=2, hooks=NO_PAUSE)

    assert statements == [2, 2, 1]
    assert (job.status, job.done_count) == ("done", 5)
    assert set(WorkflowClaim.objects.values_list("epoch", "holder_engine_id")) == {(4, None)}
    assert list(ClaimEvent.objects.order_by("id").values_list("workflow_id", flat=True)) == [
        f"wf-{n:02d}" for n in range(5)
    ]


@on_postgres
@pytest.mark.django_db
def test_a_chunk_with_a_workflow_never_claimed_takes_the_row_path(statements):
    make_mixed()
    job = create("takeover", 'id STARTS_WITH "wf-"')

    bulk_run(job.pk, hooks=NO_PAUSE)

    assert statements == []


@on_postgres
@pytest.mark.django_db
def test_a_takeover_judges_each_status_and_spreads_in_turn(statements):
    make_mixed()
    Workflow.objects.filter(workflow_id="wf-new").delete()
    factories.make_workflow("wf-odd", status="archived")
    factories.make_claim("wf-odd", epoch=1, engine=None)
    factories.make_engine("e-2")
    factories.make_engine("e-3")
    job = create("takeover", 'id STARTS_WITH "wf-"')

    job = bulk_run(job.pk, hooks=NO_PAUSE)

    assert statements == [6]
    assert outcomes(job) == {
        "wf-done": ("refused", None, "completed: a finished workflow needs no engine"),
        "wf-free": ("done", 6, "to e-2"),
        "wf-gone": ("refused", None, "the workflow row is gone"),
        "wf-held": ("done", 3, "to e-3"),
        "wf-odd": ("done", 2, "to e-2"),
        "wf-sus": ("refused", None, "suspended: resume it first"),
    }
    claims = {
        claim.workflow_id: claim
        for claim in WorkflowClaim.objects.filter(workflow_id__in=["wf-free", "wf-held"])
    }
    for claim in claims.values():
        assert claim.holder_epoch == claim.epoch
        assert claim.holder_expires_at_ms > claim.holder_claimed_at_ms
        assert claim.holder_session_epoch is None
    assert list(
        ClaimEvent.objects.order_by("id").values_list(
            "workflow_id", "kind", "epoch_before", "epoch_after", "engine_id", "bulk_job_id"
        )
    ) == [
        ("wf-free", "forced_takeover", 5, 6, "e-2", job.pk),
        ("wf-held", "forced_takeover", 2, 3, "e-3", job.pk),
        ("wf-odd", "forced_takeover", 1, 2, "e-2", job.pk),
    ]


@on_postgres
@pytest.mark.django_db
def test_a_takeover_to_an_engine_with_a_live_session_names_the_session(statements):
    make_fleet(2, epoch=4)
    factories.make_engine("e-2")
    now_ms, _ = fleet_now()
    factories.make_session("e-2", epoch=7, expires_at_ms=now_ms + 60_000, at_ms=now_ms)
    job = create("takeover", 'engine = "e-1"', target_engine_id="e-2")

    job = bulk_run(job.pk, hooks=NO_PAUSE)

    assert statements == [2]
    assert set(
        WorkflowClaim.objects.values_list(
            "epoch",
            "holder_engine_id",
            "holder_epoch",
            "holder_expires_at_ms",
            "holder_session_epoch",
        )
    ) == {(5, "e-2", 5, None, 7)}
