"""The bulk pages: "Act on all…" on the lists, the preview and the confirmation (typed
count, a changed count asked again, one job per form, bad queries, permissions, read-only
mode), the jobs list, a job's page, its live fragment and controls, its items by outcome
a page at a time and as CSV, and the audit log narrowed to what a job wrote."""

from __future__ import annotations

import csv
import io
import re
import secrets
from contextlib import nullcontext
from typing import Any

import pytest
from django.test import Client

from claims.bulk import BulkHooks, bulk_run
from claims.models import BulkJob, BulkJobItem, ClaimEvent, WorkflowClaim
from claims.services.bulk import BulkRequest, bulk_job_create

from .conftest import htmx, make_claim, make_engine, make_workflow

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("sent_runs")]

# What starting and steering a bulk job needs, every action's permission included.
BULK = ("bulk_operate", "force_claim", "cancel_workflow", "suspend_workflow")
QUERY = 'engine = "e-1"'
# A run in the test's own thread: no pause between chunks, no fleet-wide lease to share.
RUN_HERE = BulkHooks(between_chunks=lambda *args: None, lease=lambda: nullcontext(True))


@pytest.fixture
def bulk_client(signed_in_as) -> Client:
    return signed_in_as("bea", *BULK)


def fleet(count: int, *, engine: str = "e-1") -> list[str]:
    make_engine(engine)
    ids = [f"wf-{n:03d}" for n in range(count)]
    for n, workflow_id in enumerate(ids):
        make_workflow(workflow_id)
        make_claim(workflow_id, epoch=10 + n, engine=engine)
    return ids


def confirm(client: Client, **fields: Any) -> Any:
    """POST the confirmation form as the page draws it for the release of QUERY."""
    form = {
        "request_key": fields.pop("request_key", secrets.token_urlsafe(24)),
        "list": "claims",
        "query": QUERY,
        "action": "release",
        "target_engine_id": "",
        "reason": "engine e-1 is wedged",
        **fields,
    }
    return client.post("/bulk/new", form)


def form_key(html: str) -> str:
    match = re.search(r'name="request_key" value="([^"]+)"', html)
    assert match, "the page has no confirmation form"
    return match.group(1)


def make_job(count: int = 3, **fields: Any) -> BulkJob:
    fleet(count)
    request = BulkRequest(list_name="claims", query=QUERY, action="release", reason="r", **fields)
    return bulk_job_create(request, actor="bea")


# -- "Act on all…" ----------------------------------------------------------------------------


def test_act_on_all_carries_the_lists_filters_and_query(bulk_client):
    """The link holds what the list shows, as one query, for each list."""
    html = bulk_client.get("/claims/", {"query": QUERY, "state": "live"}).content.decode()
    assert "Act on all…" in html
    assert "/bulk/new?list=claims&amp;query=state+%3D+%22live%22+AND+engine+%3D+%22e-1%22" in html

    html = bulk_client.get("/workflows/", {"query": 'type = "order"'}).content.decode()
    assert "/bulk/new?list=workflows&amp;query=type+%3D+%22order%22" in html


def test_act_on_all_is_for_bulk_operators_only(signed_in_as):
    """An operator who may release one claim, but not run bulk jobs, sees no such link."""
    client = signed_in_as("olaf", "force_claim", "cancel_workflow", "suspend_workflow")
    assert "Act on all" not in client.get("/claims/", {"query": QUERY}).content.decode()
    assert "Act on all" not in client.get("/workflows/").content.decode()


# -- the preview ------------------------------------------------------------------------------


def test_preview_counts_what_would_be_done_and_refused_and_shows_the_first_rows(bulk_client):
    fleet(2)
    make_workflow("wf-free")
    make_claim("wf-free", epoch=5, engine=None)
    query = 'id STARTS_WITH "wf-"'

    response = bulk_client.get("/bulk/new", {"list": "claims", "query": query, "action": "release"})

    html = response.content.decode()
    assert response.status_code == 200
    assert '<strong id="preview-count">3</strong>' in html
    assert "<strong>2</strong>, if nothing moves" in html
    assert "<strong>1</strong> · ownerless: there is no holder to release" in html
    assert 'href="/workflows/wf-000/"' in html
    assert 'href="/workflows/wf-free/"' in html
    assert "Start the bulk release of 3 workflows" in html
    assert 'name="typed_count"' not in html  # 100 or fewer: no count to type


def test_a_query_that_cannot_be_read_says_what_and_where(bulk_client):
    response = bulk_client.get("/bulk/new", {"query": 'engine = "e-1" AND', "action": "release"})

    html = response.content.decode()
    assert response.status_code == 400
    assert 'id="query-error"' in html
    assert "engine = &quot;e-1&quot; AND\n" + " " * 18 + "^" in html
    assert "bulk-confirm" not in html


def test_the_preview_is_shown_but_confirming_is_refused_without_the_permission(signed_in_as):
    fleet(1)
    client = signed_in_as("olaf", "force_claim")

    html = client.get("/bulk/new", {"query": QUERY, "action": "release"}).content.decode()

    assert '<strong id="preview-count">1</strong>' in html
    assert "you need the permission claims.bulk_operate" in html
    assert 'name="request_key"' not in html


# -- confirming -------------------------------------------------------------------------------


def test_confirming_creates_the_job_and_sends_the_browser_to_it(
    bulk_client, sent_runs, django_capture_on_commit_callbacks
):
    fleet(3)

    with django_capture_on_commit_callbacks(execute=True):
        response = confirm(bulk_client, previewed_count="3", rate_per_s="50")

    job = BulkJob.objects.get()
    assert response.status_code == 303
    assert response["Location"] == f"/bulk/{job.pk}/"
    assert (job.action, job.query, job.frozen_count, job.previewed_count) == (
        "release",
        QUERY,
        3,
        3,
    )
    assert (job.reason, job.requested_by, job.rate_per_s) == ("engine e-1 is wedged", "bea", 50)
    assert sent_runs == [job.pk]


def test_above_a_hundred_the_count_must_be_typed(bulk_client):
    fleet(101)
    page = bulk_client.get("/bulk/new", {"query": QUERY, "action": "release"}).content.decode()
    assert 'name="typed_count"' in page

    missing = confirm(bulk_client, previewed_count="101")
    wrong = confirm(bulk_client, previewed_count="101", typed_count="110")

    assert missing.status_code == wrong.status_code == 400
    assert "type the number of workflows the preview counted, 101" in missing.content.decode()
    assert "you typed 110; the preview counted 101" in wrong.content.decode()
    assert not BulkJob.objects.exists()

    assert confirm(bulk_client, previewed_count="101", typed_count="101").status_code == 303
    assert BulkJob.objects.get().frozen_count == 101


def test_a_count_that_changed_since_the_preview_is_asked_again_with_both_numbers(bulk_client):
    fleet(4)

    response = confirm(bulk_client, previewed_count="3")

    html = response.content.decode()
    assert response.status_code == 409
    assert "The preview counted <strong>3</strong>; the query selected <strong>4</strong>" in html
    assert 'name="previewed_count" value="4"' in html  # the fresh count, to confirm again
    assert "engine e-1 is wedged" in html  # the reason is kept
    assert not BulkJob.objects.exists()

    again = confirm(bulk_client, previewed_count="4", request_key=form_key(html))
    assert again.status_code == 303


def test_the_same_form_posted_twice_creates_one_job(bulk_client):
    fleet(2)
    key = secrets.token_urlsafe(24)

    first = confirm(bulk_client, previewed_count="2", request_key=key)
    second = confirm(bulk_client, previewed_count="2", request_key=key)

    job = BulkJob.objects.get()
    assert first["Location"] == second["Location"] == f"/bulk/{job.pk}/"
    assert BulkJobItem.objects.count() == 2


def test_a_form_that_failed_may_be_posted_again(bulk_client):
    """Nothing was created under its key: the same form may be posted again."""
    fleet(2)
    key = secrets.token_urlsafe(24)

    assert confirm(bulk_client, previewed_count="2", reason="", request_key=key).status_code == 400
    assert confirm(bulk_client, previewed_count="2", request_key=key).status_code == 303
    assert BulkJob.objects.count() == 1


def test_a_bad_query_posted_shows_the_parsers_message_and_creates_nothing(bulk_client):
    fleet(1)

    response = confirm(bulk_client, previewed_count="1", query="engine = ")

    assert response.status_code == 400
    assert 'id="query-error"' in response.content.decode()
    assert not BulkJob.objects.exists()


def test_a_takeover_to_an_engine_that_is_not_live_is_refused_in_the_form(bulk_client):
    fleet(1)
    make_engine("e-gone", status="dead")

    response = confirm(
        bulk_client, previewed_count="1", action="takeover", target_engine_id="e-gone"
    )

    assert response.status_code == 400
    assert "is not a live engine that is not draining" in response.content.decode()
    assert not BulkJob.objects.exists()


@pytest.mark.parametrize(
    "codenames",
    [("force_claim",), ("bulk_operate",), ("bulk_operate", "cancel_workflow")],
    ids=["no bulk permission", "no release permission", "another action's permission"],
)
def test_confirming_needs_the_bulk_and_the_actions_permission(signed_in_as, codenames):
    fleet(1)
    client = signed_in_as("olaf", *codenames)

    assert confirm(client, previewed_count="1").status_code == 403
    assert not BulkJob.objects.exists()


def test_read_only_mode_refuses_and_says_why(bulk_client, settings):
    fleet(1)
    settings.WEFTBOARD_READ_ONLY = "database migration"

    page = bulk_client.get("/bulk/new", {"query": QUERY, "action": "release"}).content.decode()
    response = confirm(bulk_client, previewed_count="1")

    assert "database migration" in page
    assert 'name="request_key"' not in page
    assert response.status_code == 403
    assert not BulkJob.objects.exists()


# -- the jobs and one job ---------------------------------------------------------------------


def test_jobs_list_newest_first_polls_only_while_one_is_active(bulk_client):
    old = make_job(2)
    BulkJob.objects.filter(pk=old.pk).update(status="done")
    new = BulkJob.objects.create(
        list_name="workflows",
        query='status = "running"',
        action="cancel",
        reason="r",
        requested_by="carl",
        created_at_ms=old.created_at_ms + 1,
        frozen_count=0,
    )

    html = bulk_client.get("/bulk/").content.decode()

    assert html.index(f'href="/bulk/{new.pk}/"') < html.index(f'href="/bulk/{old.pk}/"')
    assert "carl" in html
    assert "status = &quot;running&quot;" in html
    assert "data-live" in html
    BulkJob.objects.filter(pk=new.pk).update(status="aborted")
    assert "data-live" not in bulk_client.get("/bulk/", **htmx("bulk-jobs-live")).content.decode()


def test_job_page_shows_what_it_does_its_progress_and_its_items(bulk_client):
    job = make_job(3, rate_per_s=5)

    html = bulk_client.get(f"/bulk/{job.pk}/").content.decode()

    assert f"Bulk job #{job.pk}: release" in html
    assert "engine e-1 is wedged" not in html
    assert '<dd class="wrap">r</dd>' in html
    assert "at most 5 items a second" in html
    assert "0 / 3 acted on" in html
    assert "data-live" in html  # queued: it polls
    assert html.count('class="kind kind--bulk-pending"') == 3
    assert f'href="/audit/?bulk_job={job.pk}"' in html
    assert f'href="/bulk/{job.pk}/items.csv"' in html
    assert f'action="/bulk/{job.pk}/pause"' in html
    assert f'action="/bulk/{job.pk}/abort"' in html


def test_the_live_fragment_follows_the_run_and_stops_polling_when_done(bulk_client):
    job = make_job(3)
    bulk_run(job.pk, hooks=RUN_HERE)

    response = bulk_client.get(f"/bulk/{job.pk}/", **htmx("bulk-job-live"))

    html = response.content.decode()
    assert html.lstrip().startswith('<section id="bulk-job-live"')
    assert "3 / 3 acted on" in html
    assert 'aria-valuenow="100.0"' in html
    assert "data-live" not in html
    assert "bulk-items" not in html  # the poll reads the progress only


def test_controls_are_for_permitted_users_only(signed_in_as):
    job = make_job(1)
    viewer = signed_in_as("vic")

    html = viewer.get(f"/bulk/{job.pk}/").content.decode()

    assert "you need the permission claims.bulk_operate" in html
    assert "/pause" not in html
    assert "/abort" not in html
    assert viewer.post(f"/bulk/{job.pk}/pause").status_code == 403
    assert BulkJob.objects.get().status == "queued"


def test_pause_resume_and_abort(bulk_client, sent_runs, django_capture_on_commit_callbacks):
    job = make_job(2)
    sent_runs.clear()

    paused = bulk_client.post(f"/bulk/{job.pk}/pause")
    assert paused.status_code == 303
    assert paused["Location"] == f"/bulk/{job.pk}/"
    assert BulkJob.objects.get().status == "paused"
    assert "Resume" in bulk_client.get(f"/bulk/{job.pk}/").content.decode()

    with django_capture_on_commit_callbacks(execute=True):
        assert bulk_client.post(f"/bulk/{job.pk}/resume").status_code == 303
    assert BulkJob.objects.get().status == "queued"
    assert sent_runs == [job.pk]

    assert bulk_client.post(f"/bulk/{job.pk}/abort", {"reason": ""}).status_code == 400
    assert bulk_client.post(f"/bulk/{job.pk}/abort", {"reason": "wrong query"}).status_code == 303
    assert BulkJob.objects.get().status == "aborted"
    # Over: nothing more to do, and the page offers nothing.
    assert bulk_client.post(f"/bulk/{job.pk}/resume").status_code == 409
    assert "Abort this job" not in bulk_client.get(f"/bulk/{job.pk}/").content.decode()


def test_an_unknown_job_is_404(bulk_client):
    assert bulk_client.get("/bulk/999/").status_code == 404
    assert bulk_client.get("/bulk/999/items.csv").status_code == 404
    assert bulk_client.post("/bulk/999/pause").status_code == 404


# -- items ------------------------------------------------------------------------------------


@pytest.fixture
def ran_job() -> BulkJob:
    """Five items: three done, one moved (its claim went on before the run), one refused
    (ownerless, nothing to release)."""
    fleet(4)
    make_workflow("wf-free")
    make_claim("wf-free", epoch=5, engine=None)
    job = bulk_job_create(
        BulkRequest(list_name="claims", query='id STARTS_WITH "wf-"', action="release", reason="r"),
        actor="bea",
    )
    WorkflowClaim.objects.filter(workflow_id="wf-003").update(epoch=99)
    return bulk_run(job.pk, hooks=RUN_HERE)


def test_items_filter_by_outcome(bulk_client, ran_job):
    assert (ran_job.done_count, ran_job.moved_count, ran_job.refused_count) == (3, 1, 1)

    moved = bulk_client.get(f"/bulk/{ran_job.pk}/", {"outcome": "moved"}, **htmx("bulk-items"))

    html = moved.content.decode()
    assert html.lstrip().startswith('<section id="bulk-items"')
    assert 'href="/workflows/wf-003/"' in html
    assert 'href="/workflows/wf-000/"' not in html
    assert bulk_client.get(f"/bulk/{ran_job.pk}/", {"outcome": "lost"}).status_code == 400


def test_items_page_with_a_keyset_next(bulk_client, ran_job, monkeypatch):
    monkeypatch.setattr("claims.views.bulk_jobs.ITEMS_PER_PAGE", 2)
    first = bulk_client.get(f"/bulk/{ran_job.pk}/").content.decode()
    cursor = re.search(r'href="\?cursor=(\d+)"', first)
    assert cursor, "the first page links to the next"

    second = bulk_client.get(f"/bulk/{ran_job.pk}/", {"cursor": cursor.group(1)}).content
    assert b"wf-002" in second
    assert b"wf-000" not in second


def test_items_csv_is_every_item_of_the_outcome_with_cells_guarded(bulk_client, ran_job):
    BulkJobItem.objects.filter(job=ran_job, outcome="refused").update(detail="=HYPERLINK(1)")

    response = bulk_client.get(f"/bulk/{ran_job.pk}/items.csv", {"outcome": "refused"})

    assert response["Content-Type"].startswith("text/csv")
    assert f"weftboard-bulk-{ran_job.pk}-refused.csv" in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0][:3] == ["workflow_id", "frozen_epoch", "outcome"]
    assert [(r[0], r[2], r[4]) for r in rows[1:]] == [("wf-free", "refused", "'=HYPERLINK(1)")]


def test_audit_shows_the_claim_events_a_job_wrote(bulk_client, ran_job):
    ClaimEvent.objects.create(workflow_id="wf-x", kind="acquired", engine_id="e-1", at_ms=1)

    html = bulk_client.get("/audit/", {"bulk_job": ran_job.pk}).content.decode()

    assert f'Showing the claim events <a href="/bulk/{ran_job.pk}/">bulk job #{ran_job.pk}' in html
    assert html.count('class="kind kind--forced_release"') == 3
    assert "wf-x" not in html
    assert bulk_client.get("/audit/", {"bulk_job": "x"}).status_code == 400


# -- query counts -----------------------------------------------------------------------------


@pytest.mark.parametrize("items", [2, 40])
def test_job_page_query_count_is_fixed(bulk_client, items, django_assert_num_queries):
    """Whatever the number of items: the session and user, the user's permissions (two),
    the frame's engine count, the job, a page of its items."""
    job = make_job(items)
    bulk_client.get(f"/bulk/{job.pk}/")

    with django_assert_num_queries(7):
        bulk_client.get(f"/bulk/{job.pk}/")
    with django_assert_num_queries(5):  # the poll: no items, no frame
        bulk_client.get(f"/bulk/{job.pk}/", **htmx("bulk-job-live"))


@pytest.mark.parametrize("jobs", [1, 12])
def test_jobs_list_query_count_is_fixed(bulk_client, jobs, django_assert_num_queries):
    make_job(2)
    for _ in range(jobs - 1):
        BulkJob.objects.create(
            list_name="claims", query=QUERY, action="release", reason="r", created_at_ms=1
        )

    # The session and user, the jobs, the user's permissions (two), the frame's engine count.
    with django_assert_num_queries(6):
        bulk_client.get("/bulk/")


@pytest.mark.parametrize("rows", [2, 30])
def test_preview_page_query_count_is_fixed(bulk_client, rows, django_assert_num_queries):
    """The session and user, permissions (two), the live engines, the preview's two reads,
    the frame's engine count."""
    fleet(rows)

    with django_assert_num_queries(8):
        bulk_client.get("/bulk/new", {"query": QUERY, "action": "release"})
