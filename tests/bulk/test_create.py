"""bulk_job_create freezes the selected workflows with their epochs in one statement, or
refuses and keeps nothing; pause, resume and abort follow the job's status rules."""

from __future__ import annotations

import pytest

import claims.services.bulk as bulk_services
from claims.models import AuditEntry, BulkJob, BulkJobItem, WorkflowClaim
from claims.protocol.errors import ClaimConfigError, InvalidInputError
from claims.query import QueryError
from claims.services.bulk import (
    BulkRequest,
    bulk_job_abort,
    bulk_job_create,
    bulk_job_pause,
    bulk_job_resume,
)
from claims.services.errors import BulkCountChangedError, BulkJobStateError, ReadOnlyError
from tests import factories

from .conftest import make_fleet, make_mixed

pytestmark = pytest.mark.django_db


def request(**fields) -> BulkRequest:
    values = {
        "list_name": "claims",
        "query": 'engine = "e-1"',
        "action": "release",
        "reason": "engine e-1 is wedged",
        **fields,
    }
    return BulkRequest(**values)


def test_freezes_each_selected_workflow_at_its_epoch(sent_runs, django_capture_on_commit_callbacks):
    make_fleet(3, epoch=4)
    WorkflowClaim.objects.filter(workflow_id="wf-01").update(epoch=6, holder_epoch=6)

    with django_capture_on_commit_callbacks(execute=True):
        job = bulk_job_create(request(expected_count=3), actor="alice")

    assert (job.status, job.frozen_count, job.previewed_count) == ("queued", 3, 3)
    assert list(job.items.order_by("id").values_list("workflow_id", "frozen_epoch", "outcome")) == [
        ("wf-00", 4, "pending"),
        ("wf-01", 6, "pending"),
        ("wf-02", 4, "pending"),
    ]
    assert sent_runs == [job.pk]
    entry = AuditEntry.objects.get()
    assert (entry.subject, entry.subject_id, entry.action, entry.actor) == (
        "bulk_job",
        job.pk,
        "create",
        "alice",
    )
    assert entry.detail["frozen"] == 3
    assert entry.reason == "engine e-1 is wedged"


def test_the_query_is_kept_as_canonical_text():
    make_fleet(1)

    job = bulk_job_create(request(query='engine="e-1"  and epoch>=1'), actor="alice")

    assert job.query == 'engine = "e-1" AND epoch >= 1'


def test_a_count_other_than_the_previewed_one_keeps_nothing(sent_runs):
    make_fleet(3)

    with pytest.raises(BulkCountChangedError) as raised:
        bulk_job_create(request(expected_count=2), actor="alice")

    assert (raised.value.previewed, raised.value.frozen) == (2, 3)
    assert not BulkJob.objects.exists()
    assert not BulkJobItem.objects.exists()
    assert not AuditEntry.objects.exists()
    assert sent_runs == []


def test_a_changed_count_may_be_accepted():
    make_fleet(3)

    job = bulk_job_create(request(expected_count=2, accept_count_change=True), actor="alice")

    assert (job.previewed_count, job.frozen_count) == (2, 3)


@pytest.mark.parametrize(
    ("fields", "error", "words"),
    [
        ({"list_name": "engines"}, InvalidInputError, "list must be one of"),
        ({"action": "delete"}, InvalidInputError, "action must be one of"),
        ({"query": "engine = "}, QueryError, "expected"),
        ({"reason": ""}, InvalidInputError, "reason"),
        ({"query": 'engine = "nobody"'}, InvalidInputError, "selects no workflows"),
        ({"target_engine_id": "e-2"}, InvalidInputError, "only a takeover"),
        ({"action": "takeover", "target_engine_id": "e-9"}, ClaimConfigError, "not a live"),
        ({"rate_per_s": 0}, InvalidInputError, "rate_per_s"),
        ({"expected_count": -1}, InvalidInputError, "negative"),
    ],
)
def test_bad_input_is_refused_and_keeps_nothing(fields, error, words):
    make_fleet(2)

    with pytest.raises(error, match=words):
        bulk_job_create(request(**fields), actor="alice")

    assert not BulkJob.objects.exists()
    assert not BulkJobItem.objects.exists()


def test_more_than_the_most_one_job_may_hold_is_refused(settings):
    make_fleet(3)
    settings.WEFTBOARD_BULK_MAX_ITEMS = 2

    with pytest.raises(InvalidInputError, match="more than 2 workflows"):
        bulk_job_create(request(), actor="alice")

    assert not BulkJobItem.objects.exists()


def test_above_the_typed_confirmation_a_job_needs_the_previewed_count(monkeypatch, sent_runs):
    make_fleet(4)
    monkeypatch.setattr(bulk_services, "TYPED_CONFIRMATION_ABOVE", 3)

    with pytest.raises(InvalidInputError, match="selects 4 workflows: above 3"):
        bulk_job_create(request(), actor="alice")
    assert not BulkJob.objects.exists()
    assert sent_runs == []

    job = bulk_job_create(request(expected_count=4), actor="alice")

    assert job.frozen_count == 4


def test_read_only_refuses_a_job(settings):
    make_fleet(2)
    settings.WEFTBOARD_READ_ONLY = "maintenance"

    with pytest.raises(ReadOnlyError):
        bulk_job_create(request(), actor="alice")

    assert not BulkJob.objects.exists()


def test_a_workflows_list_job_freezes_a_never_claimed_workflow_at_zero():
    make_mixed()

    job = bulk_job_create(
        request(list_name="workflows", query='id = "wf-new"', action="cancel"), actor="alice"
    )

    assert list(job.items.values_list("workflow_id", "frozen_epoch")) == [("wf-new", 0)]


def test_pause_resume_and_abort_follow_the_status_rules(
    sent_runs, django_capture_on_commit_callbacks
):
    make_fleet(2)
    with django_capture_on_commit_callbacks(execute=True):
        job = bulk_job_create(request(), actor="alice")

    assert bulk_job_pause(job.pk, actor="bob").status == "paused"
    with pytest.raises(BulkJobStateError, match="cannot be paused"):
        bulk_job_pause(job.pk, actor="bob")
    with django_capture_on_commit_callbacks(execute=True):
        assert bulk_job_resume(job.pk, actor="bob").status == "queued"
    assert sent_runs == [job.pk, job.pk]
    aborted = bulk_job_abort(job.pk, actor="bob", reason="wrong engine")
    assert aborted.status == "aborted"
    assert aborted.finished_at_ms is not None
    with pytest.raises(BulkJobStateError, match="cannot be resumed"):
        bulk_job_resume(job.pk, actor="bob")
    assert list(AuditEntry.objects.order_by("id").values_list("action", "actor")) == [
        ("create", "alice"),
        ("pause", "bob"),
        ("resume", "bob"),
        ("abort", "bob"),
    ]
    assert set(job.items.values_list("outcome", flat=True)) == {"pending"}


def test_a_takeover_may_name_a_live_engine():
    make_fleet(2)
    factories.make_engine("e-2")

    job = bulk_job_create(request(action="takeover", target_engine_id="e-2"), actor="alice")

    assert job.target_engine_id == "e-2"


def test_a_request_sent_again_under_its_key_returns_the_first_job(sent_runs):
    make_fleet(3)
    first = bulk_job_create(request(request_key="incident-42-release"), actor="alice")

    again = bulk_job_create(request(request_key="incident-42-release"), actor="alice")

    assert again.pk == first.pk
    assert BulkJob.objects.count() == 1
    assert BulkJobItem.objects.count() == 3
    assert AuditEntry.objects.count() == 1


def test_a_key_is_the_requesters_own():
    make_fleet(3)
    first = bulk_job_create(request(request_key="k-1"), actor="alice")

    other = bulk_job_create(request(request_key="k-1"), actor="bob")

    assert other.pk != first.pk


def test_another_request_under_a_used_key_is_refused_and_keeps_nothing():
    make_fleet(3)
    first = bulk_job_create(request(request_key="k-1"), actor="alice")

    with pytest.raises(InvalidInputError, match=f"named bulk job #{first.pk}, another request"):
        bulk_job_create(request(request_key="k-1", action="takeover"), actor="alice")

    assert BulkJob.objects.count() == 1


@pytest.mark.parametrize("key", ["", "x" * 65, "a\x00b"])
def test_a_bad_request_key_is_refused(key):
    make_fleet(1)

    with pytest.raises(InvalidInputError, match="request_key"):
        bulk_job_create(request(request_key=key), actor="alice")

    assert not BulkJob.objects.exists()
