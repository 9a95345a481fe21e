"""GET /claims: derived state, filters, keyset pages, a fixed number of queries."""

from __future__ import annotations

from datetime import datetime

import pytest
from django.test import Client

from claims.models import WorkflowClaim

from .conftest import assert_bad_query, bearer, listed_within, make_claim, now_ms, url

pytestmark = pytest.mark.django_db


@pytest.fixture
def claims():
    make_claim("a-live", engine="e-1", expires_in_ms=60_000)
    make_claim("b-grace", engine="e-2", expires_in_ms=-1_000)  # grace is 2 x 5 s
    make_claim("c-expired", engine="e-2", expires_in_ms=-60_000)
    make_claim("d-ownerless", engine=None)
    WorkflowClaim.objects.create(
        workflow_id="e-invalid", epoch=4, holder_engine_id="e-1", holder_epoch=3,
        holder_expires_at_ms=now_ms() + 60_000, holder_claimed_at_ms=now_ms(),
    )  # fmt: skip


def test_lists_claims_with_derived_state_and_times(claims, viewer_client):
    """Every claim comes with its derived state and its expiry in ms and in ISO UTC."""
    body = viewer_client.get(url("/claims")).json()

    states = {item["workflow_id"]: item["state"] for item in body["items"]}
    assert states == {
        "a-live": "live",
        "b-grace": "in-grace",
        "c-expired": "expired",
        "d-ownerless": "ownerless",
        "e-invalid": "invalid",
    }
    live = body["items"][0]
    assert live["holder_engine_id"] == "e-1"
    assert live["epoch"] == 3
    assert datetime.fromisoformat(live["expires_at"]).timestamp() * 1000 == pytest.approx(
        live["expires_at_ms"], abs=1
    )
    assert live["expires_at"].endswith("Z")
    assert 0 < live["expires_in_ms"] <= 60_000
    assert body["next_cursor"] is None
    assert abs(body["as_of_ms"] - now_ms()) < 60_000
    assert body["as_of"].endswith("Z")


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("state=live", ["a-live"]),
        ("state=in-grace", ["b-grace"]),
        ("state=expired", ["c-expired"]),
        ("state=ownerless", ["d-ownerless"]),
        ("state=invalid", ["e-invalid"]),
        ("engine=e-2", ["b-grace", "c-expired"]),
        ("prefix=c-", ["c-expired"]),
        ("cursor=c-expired", ["d-ownerless", "e-invalid"]),
    ],
)
def test_filters_narrow_the_list(claims, viewer_client, query, expected):
    """state, engine, prefix and cursor each narrow the listing."""
    body = viewer_client.get(url(f"/claims?{query}")).json()

    assert [item["workflow_id"] for item in body["items"]] == expected


def test_pages_follow_next_cursor(claims, viewer_client):
    """With a limit, next_cursor leads through every claim exactly once."""
    seen, cursor = [], ""
    while True:
        body = viewer_client.get(url(f"/claims?limit=2&cursor={cursor}")).json()
        seen += [item["workflow_id"] for item in body["items"]]
        cursor = body["next_cursor"]
        if cursor is None:
            break

    assert seen == ["a-live", "b-grace", "c-expired", "d-ownerless", "e-invalid"]


@pytest.mark.parametrize(
    "query",
    ["state=dead", "limit=0", "limit=201", "limit=abc", "limit=-1", "prefix=" + "x" * 256],
)
def test_bad_filters_get_422(viewer_client, query):
    """An unknown state or a limit outside 1..200 is refused with 422."""
    assert_bad_query(viewer_client, url(f"/claims?{query}"))


def test_listing_costs_a_fixed_number_of_queries(viewer_client, django_assert_max_num_queries):
    """A page of 200 claims costs the session, the user and one query: none per row."""
    for n in range(200):
        make_claim(f"wf-{n:03}", engine="e-1")

    body = listed_within(viewer_client, url("/claims?limit=200"), 3, django_assert_max_num_queries)

    assert len(body["items"]) == 200


def test_token_listing_costs_a_fixed_number_of_queries(
    viewer, token_for, django_assert_max_num_queries
):
    """With a token (already stamped as used) the page costs the token and one query."""
    for n in range(50):
        make_claim(f"wf-{n:03}", engine="e-1")
    headers = bearer(token_for(viewer))
    Client().get(url("/claims"), headers=headers)

    with django_assert_max_num_queries(2):
        body = Client().get(url("/claims"), headers=headers).json()

    assert len(body["items"]) == 50
