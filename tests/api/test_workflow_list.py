"""GET /workflows: filters, sorts, keyset pages and counts per status; the failure in the
ownership read."""

from __future__ import annotations

import pytest

from tests import factories

from .conftest import assert_bad_query, listed_within, url, wf_url

pytestmark = pytest.mark.django_db

FAILURE = {
    "type": "KeyError",
    "message": "'sku'",
    "step": "price",
    "traceback": "Traceback (most recent call last):\nKeyError: 'sku'\n",
    "at_ms": 1_700_000_000_000,
    "epoch": 3,
    "engine_id": "e-9",
    "step_errors": [
        {"step": "price", "attempt": 1, "type": "KeyError", "message": "'sku'", "at_ms": 5}
    ],
}


@pytest.fixture
def rows():
    factories.make_workflow("wf-a", status="running", updated_ago_ms=1_000)
    factories.make_workflow("wf-b", status="failed", updated_ago_ms=2_000, failure=FAILURE)
    factories.make_workflow("wf-c", status="failed", workflow_type="ledger", updated_ago_ms=3_000)


def test_lists_newest_change_first_with_counts_per_status(viewer_client, rows):
    body = viewer_client.get(url("/workflows")).json()

    assert [w["workflow_id"] for w in body["items"]] == ["wf-a", "wf-b", "wf-c"]
    assert body["status_counts"]["failed"] == 2
    assert body["status_counts"]["running"] == 1
    failed = body["items"][1]
    assert (failed["failure_type"], failed["failure_step"]) == ("KeyError", "price")
    assert failed["updated_at"].endswith("Z")


def test_filters_and_keyset_pages(viewer_client, rows):
    body = viewer_client.get(url("/workflows?status=failed&type=order")).json()
    assert [w["workflow_id"] for w in body["items"]] == ["wf-b"]
    assert body["status_counts"]["failed"] == 1  # the type filter applies to the counts

    first = viewer_client.get(url("/workflows?sort=id&limit=2")).json()
    assert [w["workflow_id"] for w in first["items"]] == ["wf-a", "wf-b"]
    after = viewer_client.get(url(f"/workflows?sort=id&limit=2&cursor={first['next_cursor']}"))
    assert [w["workflow_id"] for w in after.json()["items"]] == ["wf-c"]


@pytest.mark.parametrize(
    "query",
    ["status=exploded", "sort=random", "limit=0", "since_ms=5&until_ms=5", "cursor=bad"],
)
def test_bad_input_is_422(viewer_client, query):
    assert_bad_query(viewer_client, url(f"/workflows?{query}"))


def test_listing_costs_a_fixed_number_of_queries(viewer_client, django_assert_max_num_queries):
    for n in range(100):
        factories.make_workflow(f"wf-{n:03}", status="failed", failure=FAILURE)

    # the session, the user, the page, beat's snapshot (none here), the counts
    body = listed_within(
        viewer_client, url("/workflows?limit=100"), 5, django_assert_max_num_queries
    )

    assert len(body["items"]) == 100


def test_the_ownership_read_carries_the_failure(viewer_client, rows):
    failure = viewer_client.get(wf_url("wf-b", "/ownership")).json()["failure"]

    assert failure["type"] == "KeyError"
    assert failure["step"] == "price"
    assert failure["epoch"] == 3
    assert failure["engine_id"] == "e-9"
    assert failure["at"] == "2023-11-14T22:13:20Z"
    assert failure["traceback"].endswith("KeyError: 'sku'\n")
    assert failure["step_errors"][0]["attempt"] == 1
    assert viewer_client.get(wf_url("wf-a", "/ownership")).json()["failure"] is None
