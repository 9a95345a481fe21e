"""GET /claims with sort, search and scopes: cursors bound to their sort, 422 for bad input,
a released claim's last holder, and a fixed number of queries."""

from __future__ import annotations

import pytest

from claims.models import ClaimEvent
from tests import factories

from .conftest import assert_bad_query, listed_within, make_claim, now_ms, url

pytestmark = pytest.mark.django_db


@pytest.fixture
def claims():
    make_claim("a-soon", engine="e-1", expires_in_ms=5_000, epoch=4)
    make_claim("b-late", engine="e-2", expires_in_ms=50_000, epoch=2)
    make_claim("c-later", engine="e-1", expires_in_ms=90_000, epoch=9)
    factories.make_stranded_and_finished("d-stranded", "e-done", epoch=3)
    ClaimEvent.objects.create(workflow_id="e-done", kind="released", engine_id="e-2", at_ms=123)


def ids(body):
    return [item["workflow_id"] for item in body["items"]]


def walk(client, query):
    seen, cursor = [], ""
    while True:
        body = client.get(url(f"/claims?{query}&limit=2&cursor={cursor}")).json()
        seen += ids(body)
        cursor = body["next_cursor"]
        if cursor is None:
            return seen


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("sort=expires_at", ["a-soon", "b-late", "c-later", "d-stranded", "e-done"]),
        ("sort=-expires_at", ["c-later", "b-late", "a-soon", "e-done", "d-stranded"]),
        ("sort=-epoch", ["c-later", "a-soon", "e-done", "d-stranded", "b-late"]),
        ("sort=holder", ["a-soon", "c-later", "b-late", "d-stranded", "e-done"]),
        ("sort=state&state=attention", ["a-soon", "b-late", "c-later", "d-stranded"]),
        ("sort=-workflow_id&q=-", ["e-done", "d-stranded", "c-later", "b-late", "a-soon"]),
    ],
)  # fmt: skip
def test_sorted_pages_follow_next_cursor(claims, viewer_client, query, expected):
    """Each sort, asc or desc, pages through its rows once; rows without a value last."""
    assert walk(viewer_client, query) == expected


def test_the_page_names_its_sort_and_a_released_claim_its_last_holder(claims, viewer_client):
    body = viewer_client.get(url("/claims?sort=-claimed_at&state=all")).json()

    assert body["sort"] == "-claimed_at"
    done = next(item for item in body["items"] if item["workflow_id"] == "e-done")
    assert done["last_holder_engine_id"] == "e-2"
    assert done["last_held_at_ms"] == 123
    assert done["last_held_at"].endswith("Z")
    assert done["stranded"] is False
    stranded = next(item for item in body["items"] if item["workflow_id"] == "d-stranded")
    assert stranded["stranded"] is True


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("state=attention", ["a-soon", "b-late", "c-later", "d-stranded"]),
        ("state=stranded", ["d-stranded"]),
        ("state=all", ["a-soon", "b-late", "c-later", "d-stranded", "e-done"]),
        ("q=LATE", []),
        ("q=ate", ["b-late", "c-later"]),
    ],
)
def test_scopes_and_substring_search(claims, viewer_client, query, expected):
    assert ids(viewer_client.get(url(f"/claims?{query}")).json()) == expected


def test_a_cursor_from_another_sort_is_a_422(claims, viewer_client):
    cursor = viewer_client.get(url("/claims?sort=epoch&limit=1")).json()["next_cursor"]

    response = viewer_client.get(url(f"/claims?sort=-epoch&cursor={cursor}"))

    assert response.status_code == 422
    assert "sort=epoch" in response.json()["detail"]


@pytest.mark.parametrize("query", ["sort=colour", "sort=expiry", "state=finished", "q=a%01"])
def test_bad_sort_scope_or_search_is_a_422(viewer_client, query):
    assert_bad_query(viewer_client, url(f"/claims?{query}"))


@pytest.mark.parametrize("sort", ["expires_at", "-state", "holder"])
def test_sorted_listing_costs_a_fixed_number_of_queries(
    viewer_client, sort, django_assert_max_num_queries
):
    """Session, user, the held rows, the rows without a value (or the session pairs the
    claims name and one read per state), the ownerless rows' last holders and running
    workflows."""
    for n in range(100):
        make_claim(f"wf-{n:03}", engine="e-1" if n % 2 else None)
    queries = 10 if sort.lstrip("-") == "state" else 6

    body = listed_within(
        viewer_client, url(f"/claims?sort={sort}&limit=200"), queries, django_assert_max_num_queries
    )

    assert len(body["items"]) == 100
    assert abs(body["as_of_ms"] - now_ms()) < 60_000
