"""The workflows page: URL filters, sorts, keyset pages, counts per status, a fixed query count;
and a failed workflow's page: its failure, retries and re-drives."""

from __future__ import annotations

import pytest

from claims.models import PendingRedrive

from .conftest import htmx, make_claim, make_event, make_workflow, now_ms

pytestmark = pytest.mark.django_db

# what every signed-in page reads (session, user, ...), then the page, beat's snapshot (none
# here) and the counts per status, and the saved views strip (the user's and the shared
# saved queries, with their owners: one more), and the user's permissions (two), which
# decide whether "Act on all…" is shown
QUERIES = 9

FAILURE = {
    "type": "PaymentGatewayError",
    "message": "gateway answered <502>",
    "step": "charge",
    "traceback": 'Traceback (most recent call last):\n  File "w.py", line 3, in _charge\n'
    "PaymentGatewayError: gateway answered <502>\n",
    "at_ms": 1_700_000_000_000,
    "epoch": 2,
    "engine_id": "e-2",
    "step_errors": [
        {
            "step": "charge",
            "attempt": 1,
            "type": "PaymentGatewayError",
            "message": "502",
            "at_ms": 1,
        }
    ],
}


@pytest.fixture
def rows():
    make_workflow("wf-run", status="running", updated_ago_ms=1_000)
    make_workflow("wf-bad", status="failed", updated_ago_ms=2_000, failure=FAILURE)
    make_workflow("wf-ok", status="completed", workflow_type="ledger", updated_ago_ms=3_000)


def test_rows_link_to_the_workflow_and_its_claims_and_show_the_failure(viewer_client, rows):
    html = viewer_client.get("/workflows/").content.decode()

    assert 'href="/workflows/wf-bad/"' in html
    assert 'href="/claims/?prefix=wf-bad"' in html
    assert "PaymentGatewayError in charge: gateway answered &lt;502&gt;" in html
    assert html.index("wf-run") < html.index("wf-bad") < html.index("wf-ok")  # newest first
    assert 'aria-current="page">Workflows<' in html
    assert 'data-count="failed">1<' in html
    assert 'data-count="all">3<' in html


@pytest.mark.parametrize(
    ("query", "shown", "hidden"),
    [
        ("status=failed", ["wf-bad"], ["wf-run", "wf-ok"]),
        ("type=ledger", ["wf-ok"], ["wf-run", "wf-bad"]),
        ("sort=id", ["wf-bad", "wf-ok", "wf-run"], []),
        ("status=running&type=order", ["wf-run"], ["wf-bad", "wf-ok"]),
    ],
)
def test_filters_come_from_the_url(viewer_client, rows, query, shown, hidden):
    html = viewer_client.get(f"/workflows/?{query}", **htmx()).content.decode()

    assert html.lstrip().startswith('<section id="workflows-live"')
    for workflow_id in shown:
        assert f'href="/workflows/{workflow_id}/"' in html
    for workflow_id in hidden:
        assert f'href="/workflows/{workflow_id}/"' not in html
    positions = [html.index(f'href="/workflows/{w}/"') for w in shown]
    assert positions == sorted(positions)


def test_the_time_filter_takes_iso_utc(viewer_client, rows):
    since = "2000-01-01T00:00:00Z"
    html = viewer_client.get(f"/workflows/?time=created&since={since}").content.decode()
    assert "wf-run" in html

    html = viewer_client.get("/workflows/?until=2000-01-01T00:00").content.decode()
    assert "No workflow matches these filters." in html


def test_counts_under_a_time_range_stop_at_the_cap_and_say_so(viewer_client, rows, monkeypatch):
    monkeypatch.setattr("claims.selectors.workflows.listing.COUNT_CAP", 1)
    monkeypatch.setattr("claims.views.workflow_list.COUNT_CAP", 1)
    make_workflow("wf-bad-2", status="failed", updated_ago_ms=2_500)
    ranged = viewer_client.get("/workflows/?since=2000-01-01T00:00").content.decode()
    whole = viewer_client.get("/workflows/").content.decode()

    # Two failed: stopped at the cap, and said so; one running: at the cap, exact.
    capped = 'title="at least: under a time range each status is counted up to 1">1+<'
    assert f'data-count="failed" {capped}' in ranged
    assert 'data-count="running">1<' in ranged
    assert 'data-count="all" title="at least' in ranged
    assert ">3+<" in ranged
    assert "+<" not in whole  # no time range: every count is exact


def test_keyset_pages_follow_the_sort(viewer_client):
    for n in range(55):
        make_workflow(f"wf-{n:03d}", updated_ago_ms=n * 10)

    first = viewer_client.get("/workflows/?sort=id").content.decode()
    assert "wf-049" in first
    assert "wf-050" not in first
    assert "cursor=wf-049" in first

    second = viewer_client.get("/workflows/?sort=id&cursor=wf-049").content.decode()
    assert "wf-050" in second
    assert 'href="/workflows/wf-049/"' not in second


@pytest.mark.parametrize(
    "query",
    [
        "status=exploded",
        "sort=random",
        "time=deleted",
        "since=yesterday",
        "since=2025-01-02T00:00&until=2025-01-01T00:00",
        "cursor=not-a-cursor",
        "type=%00",
    ],
)
def test_bad_input_is_a_clear_400(viewer_client, query):
    response = viewer_client.get(f"/workflows/?{query}")

    assert response.status_code == 400


@pytest.mark.parametrize("n", [3, 30])
def test_query_count_does_not_grow_with_rows(viewer_client, n, django_assert_num_queries):
    for i in range(n):
        make_workflow(f"wf-{i:03d}", status="failed", failure=FAILURE)

    with django_assert_num_queries(QUERIES):
        response = viewer_client.get("/workflows/?status=failed")

    assert response.status_code == 200


def test_login_required(client):
    response = client.get("/workflows/")

    assert response.status_code == 302
    assert "/login" in response["Location"]


def test_a_failed_workflow_shows_its_failure_panel(viewer_client):
    make_workflow("wf-bad", status="failed", failure=FAILURE, state={"error": {"type": "X"}})
    make_claim("wf-bad", epoch=2, engine=None)

    html = viewer_client.get("/workflows/wf-bad/").content.decode()

    panel = html[html.index('id="failure"') :]
    assert 'data-failure="type">PaymentGatewayError<' in panel
    assert "gateway answered &lt;502&gt;" in panel
    assert 'data-failure="step">charge<' in panel
    assert 'data-failure="epoch">2<' in panel
    assert 'href="/engines/e-2/"' in panel
    assert "in _charge" in panel
    assert "2023-11-14 22:13:20" in panel  # when, in UTC


def test_a_workflow_that_did_not_fail_has_no_failure_panel(viewer_client):
    make_workflow("wf-ok", status="completed")

    html = viewer_client.get("/workflows/wf-ok/").content.decode()

    assert 'id="failure"' not in html


def test_history_lists_drives_step_retries_and_pending_redrives(viewer_client):
    state = {
        "steps": {
            "reserve": {"result": 1, "epoch": 1, "engine_id": "e-1", "at_ms": 5},
            "price": {
                "result": 2,
                "epoch": 2,
                "engine_id": "e-2",
                "at_ms": 6,
                "attempts": 3,
                "last_error": "TimeoutError: slow",
            },
        }
    }
    make_workflow("wf-r", status="failed", failure=FAILURE, state=state)
    make_claim("wf-r", epoch=2, engine="e-2")
    t = now_ms()
    make_event("wf-r", "acquired", engine_id="e-1", epoch_before=0, epoch_after=1, at_ms=t - 9)
    make_event("wf-r", "adopted", engine_id="e-1", epoch_before=1, epoch_after=1, at_ms=t - 8)
    make_event("wf-r", "takeover", engine_id="e-2", epoch_before=1, epoch_after=2, at_ms=t - 5)
    PendingRedrive.objects.create(
        engine_id="e-2",
        workflow_id="wf-r",
        epoch=2,
        attempts=4,
        last_error="db down",
        first_failed_at_ms=t - 4,
        last_failed_at_ms=t - 1,
    )

    html = viewer_client.get("/workflows/wf-r/", **htmx("workflow-history")).content.decode()

    drives = html[html.index('aria-label="Drives"') : html.index('aria-label="Step retries')]
    assert drives.count('<tr><td class="num">') == 2  # acquired+adopted is one drive
    assert "re-drive" in drives
    assert "kind--takeover" in drives
    retries = html[html.index('aria-label="Step retries') :]
    assert "TimeoutError: slow" in retries
    assert "PaymentGatewayError: 502" in retries
    assert "db down" in retries
    assert ">4<" in retries
