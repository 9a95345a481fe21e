"""GET /engines, /reclaim/cursor and /redrives."""

from __future__ import annotations

import pytest

from claims.models import EngineStatus, PendingRedrive, ReclaimCursor

from .conftest import make_engine, now_ms, url

pytestmark = pytest.mark.django_db


def redrive(engine_id, workflow_id):
    return PendingRedrive.objects.create(
        engine_id=engine_id, workflow_id=workflow_id, epoch=3, attempts=1, last_error="boom",
        first_failed_at_ms=now_ms() - 1_000, last_failed_at_ms=now_ms(),
    )  # fmt: skip


def test_engines_are_listed_with_heartbeat_age(viewer_client):
    """Every engine is listed in id order with its queue, status and heartbeat age."""
    make_engine("e-2", status=EngineStatus.DEAD)
    make_engine("e-1")

    body = viewer_client.get(url("/engines")).json()

    assert [(e["engine_id"], e["status"], e["queue"]) for e in body["items"]] == [
        ("e-1", "active", "engine.e-1"),
        ("e-2", "dead", "engine.e-2"),
    ]
    assert 1_000 <= body["items"][0]["heartbeat_age_ms"] < 60_000
    assert body["items"][0]["heartbeat_at"].endswith("Z")


def test_engines_filter_by_status(viewer_client):
    """?status= narrows the list; an unknown status is a 422."""
    make_engine("e-1")
    make_engine("e-2", status=EngineStatus.DEAD)

    body = viewer_client.get(url("/engines?status=dead")).json()

    assert [e["engine_id"] for e in body["items"]] == ["e-2"]
    assert viewer_client.get(url("/engines?status=zombie")).status_code == 422


def test_engine_list_costs_a_fixed_number_of_queries(viewer_client, django_assert_max_num_queries):
    """Twenty engines cost the session, the user and one query."""
    for n in range(20):
        make_engine(f"e-{n:02}")
    viewer_client.get(url("/engines"))

    with django_assert_max_num_queries(3):
        assert len(viewer_client.get(url("/engines")).json()["items"]) == 20


def test_reclaim_cursor_before_any_pass_is_at_the_start(viewer_client):
    """With no pass yet the cursor is at the start of the keyspace, never wrapped."""
    body = viewer_client.get(url("/reclaim/cursor")).json()

    assert body | {"as_of_ms": 0, "as_of": None} == {
        "name": "default",
        "last_workflow_id": None,
        "wraps": 0,
        "scanned_total": 0,
        "updated_at_ms": 0,
        "updated_at": None,
        "updated_by": "",
        "as_of_ms": 0,
        "as_of": None,
    }


def test_reclaim_cursor_shows_where_the_scan_resumes(viewer_client):
    """The cursor row's position, wraps and scanned total are reported."""
    ReclaimCursor.objects.create(
        name="default", last_workflow_id="wf-500", wraps=3, scanned_total=12_000,
        updated_at_ms=now_ms(), updated_by="e-1",
    )  # fmt: skip

    body = viewer_client.get(url("/reclaim/cursor")).json()

    assert (body["last_workflow_id"], body["wraps"], body["scanned_total"]) == ("wf-500", 3, 12_000)
    assert body["updated_by"] == "e-1"
    assert body["updated_at"].endswith("Z")


def test_redrives_are_listed_and_paged(viewer_client):
    """Re-drives come oldest first; next_cursor leads to the rest."""
    for n in range(3):
        redrive("e-1", f"wf-{n}")

    first = viewer_client.get(url("/redrives?limit=2")).json()
    rest = viewer_client.get(url(f"/redrives?limit=2&cursor={first['next_cursor']}")).json()

    assert [r["workflow_id"] for r in first["items"]] == ["wf-0", "wf-1"]
    assert [r["workflow_id"] for r in rest["items"]] == ["wf-2"]
    assert rest["next_cursor"] is None
    assert first["items"][0]["last_error"] == "boom"


def test_redrives_filter_by_engine(viewer_client):
    """?engine= keeps one engine's re-drives."""
    redrive("e-1", "wf-a")
    redrive("e-2", "wf-b")

    body = viewer_client.get(url("/redrives?engine=e-2")).json()

    assert [r["workflow_id"] for r in body["items"]] == ["wf-b"]


@pytest.mark.parametrize("query", ["limit=0", "limit=201", "cursor=-1", "cursor=abc"])
def test_bad_redrive_paging_gets_422(viewer_client, query):
    """A limit outside 1..200 or a cursor that is not a row id is refused with 422."""
    assert viewer_client.get(url(f"/redrives?{query}")).status_code == 422


def test_redrive_list_costs_a_fixed_number_of_queries(viewer_client, django_assert_max_num_queries):
    """Fifty re-drives cost the session, the user and one query."""
    for n in range(50):
        redrive("e-1", f"wf-{n}")
    viewer_client.get(url("/redrives"))

    with django_assert_max_num_queries(3):
        assert len(viewer_client.get(url("/redrives")).json()["items"]) == 50
