"""GET /claims and GET /workflows take ``query``: the query language beside the other
filters, a bad query refused with what is wrong and where, nothing else changed."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from claims.models import Workflow

from .conftest import assert_bad_query, listed_within, make_claim, make_engine, make_workflow, url

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet_rows():
    make_engine("e-3", name="engine3@host-a")
    make_workflow("o-1", workflow_type="order")  # held by engine3, expired
    make_claim("o-1", engine="e-3", expires_in_ms=-120_000)
    make_workflow("o-2", workflow_type="order")  # held by engine3, live
    make_claim("o-2", engine="e-3", expires_in_ms=60_000)
    make_workflow("i-1", workflow_type="invoice")  # stranded
    make_claim("i-1", engine=None)
    make_workflow("i-2", workflow_type="invoice", status="completed")  # never claimed


def listed(client, path: str, **params: str) -> list[str]:
    response = client.get(url(path) + "?" + urlencode(params))
    assert response.status_code == 200, response.content
    return [item["workflow_id"] for item in response.json()["items"]]


def test_the_claims_list_selects_by_query(fleet_rows, viewer_client):
    the_example = 'type = "order" AND engine = "engine3@host-a" AND state = "expired"'
    assert listed(viewer_client, "/claims", query=the_example + " AND expires > now - 10m") == [
        "o-1"
    ]
    assert listed(viewer_client, "/claims", query='state = "stranded"') == ["i-1"]
    assert listed(viewer_client, "/claims", query='NOT type = "order"') == ["i-1"]
    # The other filters still apply, under the query.
    assert listed(viewer_client, "/claims", query='type = "order"', state="live") == ["o-2"]


def test_the_workflows_list_selects_by_query_and_counts_under_it(fleet_rows, viewer_client):
    response = viewer_client.get(url("/workflows?") + urlencode({"query": 'type = "invoice"'}))
    body = response.json()
    assert sorted(item["workflow_id"] for item in body["items"]) == ["i-1", "i-2"]
    counted = {status: n for status, n in body["status_counts"].items() if n}
    assert counted == {"running": 1, "completed": 1}
    # A claim field on a workflow never claimed has no value: only i-1 is ownerless.
    assert listed(viewer_client, "/workflows", query='state = "ownerless"') == ["i-1"]
    assert sorted(listed(viewer_client, "/workflows", query='engine STARTS_WITH "engine3"')) == [
        "o-1",
        "o-2",
    ]


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ('type = "order" AND', "position 18"),
        ('colour = "red"', "unknown field 'colour'"),
        ('state = "sleepy"', "sleepy"),
        ("epoch > now - 1x", "position"),
        ('type < "order"', "cannot be compared"),
    ],
)
@pytest.mark.parametrize("path", ["/claims", "/workflows"])
def test_a_bad_query_is_refused_saying_what_and_where(fleet_rows, viewer_client, path, query, says):
    response = viewer_client.get(url(path) + "?" + urlencode({"query": query}))
    assert response.status_code == 422, response.content
    assert says in response.json()["detail"]
    assert Workflow.objects.count() == 4


def test_an_over_long_query_is_refused(viewer_client):
    assert_bad_query(viewer_client, url("/claims?") + urlencode({"query": "id = " + "x" * 3000}))


def test_a_query_costs_a_fixed_number_of_statements(
    fleet_rows, viewer_client, django_assert_max_num_queries
):
    """Workflow fields are probes inside the one listing statement, not a query per row."""
    query = urlencode({"query": 'type IN ("order", "invoice") AND NOT status = "failed"'})
    body = listed_within(viewer_client, url("/claims?") + query, 8, django_assert_max_num_queries)
    assert len(body["items"]) == 3
