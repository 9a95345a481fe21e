"""POST /bulk-jobs/preview, POST /bulk-jobs, GET /bulk-jobs[/{id}[/items]], and a job's
pause, resume and abort: each route's answers, and refusals that change nothing."""

from __future__ import annotations

import csv
import io
from types import SimpleNamespace
from typing import Any

import pytest
from django.test import Client

from claims.models import AuditEntry, BulkJob, BulkJobItem, WorkflowClaim, WorkflowStatus
from claims.services.bulk import TYPED_CONFIRMATION_ABOVE
from fuzz.hooks import refused_by_a_rule
from tests import factories

from .conftest import bearer, now_ms, post, url

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("sent_runs")]

BULK_PERMISSIONS = (*factories.WRITE_PERMISSIONS, "bulk_operate")
RELEASE_E1 = {"list": "claims", "query": 'engine = "e-1"', "action": "release"}
JOB = {**RELEASE_E1, "reason": "engine e-1 is wedged"}


@pytest.fixture
def bulker(django_user_model: Any) -> Any:
    return factories.make_user("bulker", BULK_PERMISSIONS)


@pytest.fixture
def bulker_client(bulker: Any) -> Client:
    client = Client()
    client.force_login(bulker)
    return client


def make_fleet(count: int, *, engine: str = "e-1", epoch: int = 3) -> list[str]:
    """``count`` running workflows wf-000 .. held by ``engine`` at ``epoch``."""
    ids = [f"wf-{n:03d}" for n in range(count)]
    for workflow_id in ids:
        factories.make_workflow(workflow_id)
        factories.make_claim(workflow_id, epoch=epoch, engine=engine)
    return ids


def make_job(*, status: str = "running", action: str = "release", **fields: Any) -> BulkJob:
    return BulkJob.objects.create(
        list_name="claims",
        query='engine = "e-1"',
        action=action,
        reason="wedged",
        requested_by="alice",
        created_at_ms=now_ms(),
        status=status,
        **fields,
    )


def job_state(job: BulkJob) -> tuple[str, int]:
    job.refresh_from_db()
    return job.status, AuditEntry.objects.count()


# -- preview ---------------------------------------------------------------------------------


def test_preview_counts_the_selection_and_what_the_rules_refuse(bulker_client):
    make_fleet(3)
    factories.make_workflow("wf-free")
    factories.make_claim("wf-free", epoch=5, engine=None)

    response = post(
        bulker_client,
        url("/bulk-jobs/preview"),
        {"list": "claims", "query": "epoch >= 1", "action": "release"},
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["count"], body["acting"]) == (4, 3)
    assert body["refused"] == [{"rule": "ownerless: there is no holder to release", "count": 1}]
    assert [row["workflow_id"] for row in body["first"]] == [
        "wf-000",
        "wf-001",
        "wf-002",
        "wf-free",
    ]
    assert body["first"][3] == {
        "workflow_id": "wf-free",
        "epoch": 5,
        "status": "running",
        "held": False,
        "refusal": "ownerless: there is no holder to release",
    }
    assert (body["too_many"], body["confirm_required"]) == (False, False)
    assert body["as_of"].endswith("Z") or body["as_of"].endswith("+00:00")
    assert not BulkJob.objects.exists()
    assert not AuditEntry.objects.exists()


def test_preview_above_the_typed_confirmation_asks_for_it(bulker_client, settings):
    make_fleet(TYPED_CONFIRMATION_ABOVE + 1)
    settings.WEFTBOARD_BULK_MAX_ITEMS = TYPED_CONFIRMATION_ABOVE

    body = post(bulker_client, url("/bulk-jobs/preview"), RELEASE_E1).json()

    assert body["count"] == TYPED_CONFIRMATION_ABOVE + 1
    assert (body["confirm_required"], body["too_many"]) == (True, True)
    assert body["max_items"] == TYPED_CONFIRMATION_ABOVE


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"query": "engine = "}, "position"),
        ({"list": "engines"}, "list"),
        ({"action": "delete"}, "action"),
        ({"query": ""}, "query"),
        ({"target_engine_id": "e-2"}, "only a takeover"),
    ],
    ids=["unreadable-query", "unknown-list", "unknown-action", "empty-query", "target"],
)
def test_preview_of_bad_input_is_a_422(bulker_client, fields, words):
    response = post(bulker_client, url("/bulk-jobs/preview"), {**RELEASE_E1, **fields})

    assert response.status_code == 422, response.content
    assert words in str(response.json()["detail"])


def test_preview_needs_what_a_job_needs(operator_client, bulker_client, bulker, token_for, client):
    """The action's own permission and bulk_operate, a write token, and not read-only."""
    make_fleet(1)
    path = url("/bulk-jobs/preview")
    assert post(operator_client, path, RELEASE_E1).status_code == 403  # no bulk_operate
    read_token = bearer(token_for(bulker, scope="read"))
    assert post(client, path, RELEASE_E1, headers=read_token).status_code == 403
    write_token = bearer(token_for(bulker, scope="write", name="w"))
    assert post(client, path, RELEASE_E1, headers=write_token).status_code == 200


def test_preview_needs_the_actions_own_permission(django_user_model):
    user = factories.make_user("half", ["bulk_operate", "suspend_workflow"])
    client = Client()
    client.force_login(user)
    path = url("/bulk-jobs/preview")

    assert post(client, path, RELEASE_E1).status_code == 403  # release needs force_claim
    assert post(client, path, {**RELEASE_E1, "action": "suspend"}).status_code == 200


# -- create ----------------------------------------------------------------------------------


def test_create_freezes_the_selection_and_answers_201_with_the_job(bulker_client, sent_runs):
    make_fleet(3)

    response = post(bulker_client, url("/bulk-jobs"), {**JOB, "expected_count": 3})

    assert response.status_code == 201, response.content
    body = response.json()
    job = BulkJob.objects.get()
    assert body["id"] == job.pk
    assert (body["status"], body["list"], body["action"]) == ("queued", "claims", "release")
    assert (body["query"], body["reason"]) == ('engine = "e-1"', "engine e-1 is wedged")
    assert (body["previewed_count"], body["frozen_count"]) == (3, 3)
    assert body["counts"] == {"pending": 3, "done": 0, "moved": 0, "refused": 0}
    assert body["percent"] == 0.0
    assert body["requested_by"] == "bulker"
    assert body["created_at_ms"] == job.created_at_ms
    assert body["created_at"].startswith("20")
    assert (body["started_at"], body["finished_at"]) == (None, None)
    assert list(job.items.values_list("workflow_id", "frozen_epoch")) == [
        ("wf-000", 3),
        ("wf-001", 3),
        ("wf-002", 3),
    ]


def test_a_create_sent_again_under_its_request_key_answers_the_first_job(bulker_client, sent_runs):
    """The answer to a create was lost: the client sends it again, and gets the same job."""
    make_fleet(3)
    body = {**JOB, "expected_count": 3, "request_key": "incident-42"}

    first = post(bulker_client, url("/bulk-jobs"), body)
    again = post(bulker_client, url("/bulk-jobs"), body)
    other = post(bulker_client, url("/bulk-jobs"), {**body, "action": "takeover"})

    assert (first.status_code, again.status_code) == (201, 201)
    assert again.json()["id"] == first.json()["id"]
    assert first.json()["request_key"] == "incident-42"
    assert other.status_code == 422
    assert "another request" in other.json()["detail"]
    # The field's description documents the refusal; the API fuzz reads it as that rule.
    sent = SimpleNamespace(url="http://testserver/api/v1/bulk-jobs", body=None)
    assert refused_by_a_rule(SimpleNamespace(content=other.content, request=sent))
    assert BulkJob.objects.count() == 1


def test_a_token_acts_in_its_users_name(bulker, token_for, client):
    make_fleet(1)
    secret = token_for(bulker, scope="write")

    response = post(client, url("/bulk-jobs"), JOB, headers=bearer(secret))

    assert response.status_code == 201, response.content
    assert response.json()["requested_by"].startswith("bulker (token ")


def test_a_changed_count_answers_409_with_both_counts_and_keeps_nothing(bulker_client):
    make_fleet(3)

    response = post(bulker_client, url("/bulk-jobs"), {**JOB, "expected_count": 2})

    assert response.status_code == 409, response.content
    body = response.json()
    assert (body["previewed"], body["frozen"]) == (2, 3)
    assert "2 workflows when previewed and 3 now" in body["detail"]
    assert not BulkJob.objects.exists()
    assert not BulkJobItem.objects.exists()
    assert not AuditEntry.objects.exists()


def test_a_changed_count_may_be_accepted(bulker_client):
    make_fleet(3)

    response = post(
        bulker_client,
        url("/bulk-jobs"),
        {**JOB, "expected_count": 2, "accept_count_change": True},
    )

    assert response.status_code == 201, response.content
    assert (response.json()["previewed_count"], response.json()["frozen_count"]) == (2, 3)


def test_above_the_typed_confirmation_a_job_needs_the_previewed_count(bulker_client):
    make_fleet(TYPED_CONFIRMATION_ABOVE + 1)
    count = TYPED_CONFIRMATION_ABOVE + 1

    refused = post(bulker_client, url("/bulk-jobs"), JOB)

    assert refused.status_code == 422, refused.content
    assert "expected_count" in refused.json()["detail"]
    assert not BulkJob.objects.exists()
    created = post(bulker_client, url("/bulk-jobs"), {**JOB, "expected_count": count})
    assert created.status_code == 201, created.content
    assert created.json()["frozen_count"] == count


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"query": "engine = "}, "position"),
        ({"query": 'engine = "nobody"'}, "selects no workflows"),
        ({"reason": ""}, "reason"),
        ({"reason": "   "}, "reason"),
        ({"list": "engines"}, "list"),
        ({"action": "delete"}, "action"),
        ({"target_engine_id": "e-2"}, "only a takeover"),
        ({"action": "takeover", "target_engine_id": "e-9"}, "not a live engine"),
        ({"rate_per_s": 0}, "rate_per_s"),
        ({"rate_per_s": "5"}, "rate_per_s"),
        ({"expected_count": -1}, "expected_count"),
        ({"expected_count": 1.0}, "expected_count"),
        ({"accept_count_change": "yes"}, "accept_count_change"),
    ],
)
def test_create_of_bad_input_is_a_422_and_keeps_nothing(bulker_client, fields, words):
    make_fleet(2)

    response = post(bulker_client, url("/bulk-jobs"), {**JOB, **fields})

    assert response.status_code == 422, response.content
    assert words in str(response.json()["detail"])
    assert not BulkJob.objects.exists()
    assert not AuditEntry.objects.exists()


def test_create_of_an_unreadable_body_is_a_400(bulker_client):
    response = bulker_client.post(url("/bulk-jobs"), "{", content_type="application/json")

    assert response.status_code == 400
    assert not BulkJob.objects.exists()


@pytest.mark.parametrize("who", ["viewer", "operator", "read-token", "read-only"])
def test_create_refused_changes_nothing(
    who, viewer_client, operator_client, bulker, token_for, settings
):
    """Without bulk_operate (the operator), without any write permission (the viewer), with
    a read token, or in read-only mode: 403, and no job, item or record."""
    make_fleet(2)
    client, headers = bulker_client_for(who, viewer_client, operator_client, bulker, token_for)
    if who == "read-only":
        settings.WEFTBOARD_READ_ONLY = "maintenance"

    response = post(client, url("/bulk-jobs"), JOB, headers=headers)

    assert response.status_code == 403, response.content
    assert not BulkJob.objects.exists()
    assert not BulkJobItem.objects.exists()
    assert not AuditEntry.objects.exists()


def bulker_client_for(
    who: str, viewer_client: Client, operator_client: Client, bulker: Any, token_for: Any
) -> tuple[Client, dict[str, str] | None]:
    if who == "viewer":
        return viewer_client, None
    if who == "operator":
        return operator_client, None
    if who == "read-token":
        return Client(), bearer(token_for(bulker, scope="read"))
    signed_in = Client()
    signed_in.force_login(bulker)
    return signed_in, None


def test_anonymous_gets_401(client):
    assert post(client, url("/bulk-jobs"), JOB).status_code == 401
    assert client.get(url("/bulk-jobs")).status_code == 401


# -- reads -----------------------------------------------------------------------------------


def test_list_newest_first_by_status_and_bounded(viewer_client):
    old = make_job(status="done")
    paused = make_job(status="paused")
    new = make_job(status="running")

    body = viewer_client.get(url("/bulk-jobs")).json()
    assert [job["id"] for job in body["items"]] == [new.pk, paused.pk, old.pk]
    assert body["any_active"] is True
    only_paused = viewer_client.get(url("/bulk-jobs?status=paused")).json()["items"]
    assert [job["id"] for job in only_paused] == [paused.pk]
    assert len(viewer_client.get(url("/bulk-jobs?limit=2")).json()["items"]) == 2
    assert viewer_client.get(url("/bulk-jobs?status=sleeping")).status_code == 422
    assert viewer_client.get(url("/bulk-jobs?limit=0")).status_code == 422
    assert viewer_client.get(url("/bulk-jobs?limit=201")).status_code == 422


def test_list_reads_once(viewer_client, django_assert_max_num_queries):
    """One query for the jobs, whatever their number (the session and the user besides)."""
    for _ in range(5):
        make_job()
    viewer_client.get(url("/bulk-jobs"))
    with django_assert_max_num_queries(4):
        assert len(viewer_client.get(url("/bulk-jobs")).json()["items"]) == 5


def test_read_one_job_with_its_counts_and_percent(viewer_client):
    at = now_ms()
    job = make_job(
        status="running",
        frozen_count=10,
        done_count=3,
        moved_count=1,
        refused_count=1,
        started_at_ms=at,
        target_engine_id=None,
        previewed_count=10,
    )

    response = viewer_client.get(url(f"/bulk-jobs/{job.pk}"))

    assert response.status_code == 200
    body = response.json()
    assert body["counts"] == {"pending": 5, "done": 3, "moved": 1, "refused": 1}
    assert body["percent"] == 50.0
    assert (body["status"], body["requested_by"], body["reason"]) == ("running", "alice", "wedged")
    assert body["started_at_ms"] == at
    assert body["started_at"] is not None
    assert body["finished_at"] is None


@pytest.mark.parametrize("path", ["/bulk-jobs/999999", "/bulk-jobs/999999/items"])
def test_unknown_job_is_a_404(viewer_client, path):
    response = viewer_client.get(url(path))

    assert response.status_code == 404
    assert response.json() == {"detail": "not found"}


@pytest.mark.parametrize("path", ["/bulk-jobs/0", "/bulk-jobs/x", "/bulk-jobs/-1/items"])
def test_a_job_id_that_is_no_id_is_a_422(viewer_client, path):
    assert viewer_client.get(url(path)).status_code == 422


def make_items(job: BulkJob) -> list[BulkJobItem]:
    """Five items: done, moved, pending, done, refused, in that id order."""
    outcomes = ["done", "moved", "pending", "done", "refused"]
    return [
        BulkJobItem.objects.create(
            job=job,
            workflow_id=f"wf-{n}",
            frozen_epoch=3,
            outcome=outcome,
            epoch_after=4 if outcome == "done" else None,
            acted_at_ms=None if outcome == "pending" else 1_700_000_000_000,
        )
        for n, outcome in enumerate(outcomes)
    ]


def test_items_page_by_keyset_in_item_order(viewer_client):
    job = make_job()
    items = make_items(job)
    path = url(f"/bulk-jobs/{job.pk}/items")

    first = viewer_client.get(f"{path}?limit=2").json()
    assert [item["workflow_id"] for item in first["items"]] == ["wf-0", "wf-1"]
    assert first["next_cursor"] == items[1].pk
    second = viewer_client.get(f"{path}?limit=2&cursor={first['next_cursor']}").json()
    assert [item["workflow_id"] for item in second["items"]] == ["wf-2", "wf-3"]
    last = viewer_client.get(f"{path}?limit=2&cursor={second['next_cursor']}").json()
    assert [item["workflow_id"] for item in last["items"]] == ["wf-4"]
    assert last["next_cursor"] is None
    assert first["items"][0] == {
        "id": items[0].pk,
        "workflow_id": "wf-0",
        "frozen_epoch": 3,
        "outcome": "done",
        "epoch_after": 4,
        "detail": "",
        "acted_at_ms": 1_700_000_000_000,
        "acted_at": "2023-11-14T22:13:20Z",
    }


def test_items_by_outcome(viewer_client):
    job = make_job()
    make_items(job)
    other = make_job()
    make_items(other)

    body = viewer_client.get(url(f"/bulk-jobs/{job.pk}/items?outcome=done")).json()

    assert [item["workflow_id"] for item in body["items"]] == ["wf-0", "wf-3"]
    assert all(item["outcome"] == "done" for item in body["items"])
    assert viewer_client.get(url(f"/bulk-jobs/{job.pk}/items?outcome=lost")).status_code == 422


@pytest.mark.parametrize("query", ["limit=0", "limit=1001", "cursor=-1", "format=xml"])
def test_items_of_bad_parameters_are_a_422(viewer_client, query):
    job = make_job()

    assert viewer_client.get(url(f"/bulk-jobs/{job.pk}/items?{query}")).status_code == 422


def read_csv(response: Any) -> list[list[str]]:
    text = b"".join(response.streaming_content).decode()
    return list(csv.reader(io.StringIO(text)))


def test_items_as_csv_every_item_with_times_in_utc(viewer_client):
    job = make_job()
    make_items(job)

    response = viewer_client.get(url(f"/bulk-jobs/{job.pk}/items?format=csv"))

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert f"weftboard-bulk-job-{job.pk}.csv" in response["Content-Disposition"]
    rows = read_csv(response)
    assert rows[0] == [
        "workflow_id",
        "frozen_epoch",
        "outcome",
        "epoch_after",
        "detail",
        "acted_at_ms",
        "acted_at_utc",
    ]
    assert [row[0] for row in rows[1:]] == ["wf-0", "wf-1", "wf-2", "wf-3", "wf-4"]
    assert rows[1][5:] == ["1700000000000", "2023-11-14T22:13:20.000Z"]
    assert rows[3][5:] == ["", ""]


def test_items_as_csv_by_outcome(viewer_client):
    job = make_job()
    make_items(job)

    rows = read_csv(viewer_client.get(url(f"/bulk-jobs/{job.pk}/items?format=csv&outcome=done")))

    assert [row[0] for row in rows[1:]] == ["wf-0", "wf-3"]


def test_csv_cells_that_would_be_formulas_are_guarded(viewer_client):
    """A workflow id or detail a spreadsheet would run as a formula is written as text."""
    job = make_job()
    BulkJobItem.objects.create(
        job=job,
        workflow_id='=HYPERLINK("http://evil","x")',
        frozen_epoch=1,
        outcome="refused",
        detail="+cmd|' /C calc'!A0",
    )
    BulkJobItem.objects.create(job=job, workflow_id="@sum(1)", frozen_epoch=1)

    rows = read_csv(viewer_client.get(url(f"/bulk-jobs/{job.pk}/items?format=csv")))

    assert rows[1][0] == '\'=HYPERLINK("http://evil","x")'
    assert rows[1][4] == "'+cmd|' /C calc'!A0"
    assert rows[2][0] == "'@sum(1)"


@pytest.mark.parametrize("query", ["cursor=3", "limit=5"])
def test_csv_takes_no_cursor_or_limit(viewer_client, query):
    job = make_job()

    response = viewer_client.get(url(f"/bulk-jobs/{job.pk}/items?format=csv&{query}"))

    assert response.status_code == 422
    assert "every item" in response.json()["detail"]


def test_a_read_token_reads(bulker, token_for, client):
    job = make_job()
    headers = bearer(token_for(bulker, scope="read"))

    assert client.get(url(f"/bulk-jobs/{job.pk}"), headers=headers).status_code == 200
    assert client.get(url(f"/bulk-jobs/{job.pk}/items"), headers=headers).status_code == 200


# -- pause, resume, abort --------------------------------------------------------------------


def test_pause_resume_abort_follow_the_status_rules(
    bulker_client, sent_runs, django_capture_on_commit_callbacks
):
    job = make_job(status="running")
    base = url(f"/bulk-jobs/{job.pk}")

    paused = post(bulker_client, f"{base}/pause")
    assert paused.status_code == 200, paused.content
    assert paused.json()["status"] == "paused"
    again = post(bulker_client, f"{base}/pause")
    assert again.status_code == 409
    assert "cannot be paused" in again.json()["detail"]
    with django_capture_on_commit_callbacks(execute=True):
        resumed = post(bulker_client, f"{base}/resume")
    assert resumed.json()["status"] == "queued"
    assert sent_runs == [job.pk]
    aborted = post(bulker_client, f"{base}/abort", {"reason": "wrong engine"})
    assert aborted.status_code == 200
    assert aborted.json()["status"] == "aborted"
    assert aborted.json()["finished_at"] is not None
    assert post(bulker_client, f"{base}/resume").status_code == 409
    assert post(bulker_client, f"{base}/abort", {"reason": "again"}).status_code == 409
    entries = AuditEntry.objects.order_by("id").values_list("action", "actor", "reason")
    assert list(entries) == [
        ("pause", "bulker", ""),
        ("resume", "bulker", ""),
        ("abort", "bulker", "wrong engine"),
    ]


@pytest.mark.parametrize("body", [{}, {"reason": ""}, {"reason": " "}, None])
def test_abort_needs_a_reason(bulker_client, body):
    job = make_job(status="running")
    path = url(f"/bulk-jobs/{job.pk}/abort")

    response = bulker_client.post(path, body, content_type="application/json")

    assert response.status_code in (400, 422), response.content
    assert job_state(job) == ("running", 0)


@pytest.mark.parametrize("verb", ["pause", "resume", "abort"])
def test_unknown_job_write_is_a_404(bulker_client, verb):
    response = post(bulker_client, url(f"/bulk-jobs/999999/{verb}"), {"reason": "r"})

    assert response.status_code == 404


@pytest.mark.parametrize("verb", ["pause", "abort"])
def test_job_writes_need_the_jobs_action_permission(verb, django_user_model):
    """A suspend job is paused or aborted by whoever may suspend, not by whoever may only
    force claims: each write needs bulk_operate and the job's own action's permission."""
    job = make_job(action="suspend")
    forcer = factories.make_user("forcer", ["force_claim", "bulk_operate"])
    client = Client()
    client.force_login(forcer)

    response = post(client, url(f"/bulk-jobs/{job.pk}/{verb}"), {"reason": "r"})

    assert response.status_code == 403
    assert "claims.suspend_workflow" in response.json()["detail"]
    assert job_state(job) == ("running", 0)


@pytest.mark.parametrize("who", ["viewer", "operator", "read-token", "read-only"])
@pytest.mark.parametrize("verb", ["pause", "abort"])
def test_job_writes_refused_change_nothing(
    who, verb, viewer_client, operator_client, bulker, token_for, settings
):
    job = make_job(status="running")
    client, headers = bulker_client_for(who, viewer_client, operator_client, bulker, token_for)
    if who == "read-only":
        settings.WEFTBOARD_READ_ONLY = "maintenance"

    response = post(client, url(f"/bulk-jobs/{job.pk}/{verb}"), {"reason": "r"}, headers=headers)

    assert response.status_code == 403, response.content
    assert job_state(job) == ("running", 0)


def test_resume_of_a_paused_job_refused_in_read_only(bulker_client, settings, sent_runs):
    job = make_job(status="paused")
    settings.WEFTBOARD_READ_ONLY = "maintenance"

    response = post(bulker_client, url(f"/bulk-jobs/{job.pk}/resume"))

    assert response.status_code == 403
    assert "maintenance" in response.json()["detail"]
    assert job_state(job) == ("paused", 0)
    assert sent_runs == []


def test_a_created_job_changes_no_claim(bulker_client):
    """Creating freezes; acting is the runner's: every claim stays as it was."""
    make_fleet(2)
    before = list(WorkflowClaim.objects.values_list("workflow_id", "epoch", "holder_engine_id"))

    assert post(bulker_client, url("/bulk-jobs"), JOB).status_code == 201

    after = list(WorkflowClaim.objects.values_list("workflow_id", "epoch", "holder_engine_id"))
    assert after == before


def test_a_workflows_job_names_workflows_never_claimed(bulker_client):
    factories.make_workflow("wf-new")
    factories.make_workflow("wf-done", status=WorkflowStatus.COMPLETED)

    response = post(
        bulker_client,
        url("/bulk-jobs"),
        {"list": "workflows", "query": 'id = "wf-new"', "action": "cancel", "reason": "stop"},
    )

    assert response.status_code == 201, response.content
    job = BulkJob.objects.get()
    assert list(job.items.values_list("workflow_id", "frozen_epoch")) == [("wf-new", 0)]
