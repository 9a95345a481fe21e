"""GET /engines with worker names and the derived `silent` state; engine filters by name."""

from __future__ import annotations

from typing import Any

import pytest

from claims.models import Engine, EngineStatus

from .conftest import make_claim, make_engine, now_ms, url

pytestmark = pytest.mark.django_db

SILENT_MS = 30_000 + 2 * 5_000 + 1_000  # past TTL + 2 x renew interval (the test settings)


@pytest.fixture(autouse=True)
def _timing(settings: Any) -> None:
    settings.WEFT_CLAIM_TTL = "30s"
    settings.WEFT_CLAIM_RENEW_INTERVAL = "5s"


def test_engines_carry_their_name_and_a_display_status(viewer_client: Any) -> None:
    make_engine("e-1")
    Engine.objects.filter(engine_id="e-1").update(name="engine1@host")

    (item,) = viewer_client.get(url("/engines")).json()["items"]

    assert (item["name"], item["status"], item["display_status"]) == (
        "engine1@host",
        "active",
        "active",
    )
    assert (item["silent_claims"], item["takeover_at_ms"], item["takeover_at"]) == (
        None,
        None,
        None,
    )


def test_a_silent_engine_lists_its_claims_and_takeover_time(viewer_client: Any) -> None:
    make_engine("e-quiet")
    Engine.objects.filter(engine_id="e-quiet").update(heartbeat_at_ms=now_ms() - SILENT_MS)
    claim = make_claim("wf-1", engine="e-quiet")

    (item,) = viewer_client.get(url("/engines")).json()["items"]

    assert (item["status"], item["display_status"], item["silent_claims"]) == (
        "active",
        "silent",
        1,
    )
    assert claim.holder_expires_at_ms is not None
    assert item["takeover_at_ms"] == claim.holder_expires_at_ms + 10_000  # plus grace
    assert item["takeover_at"].endswith("Z")


def test_dead_engines_stay_dead(viewer_client: Any) -> None:
    make_engine("e-dead", status=EngineStatus.DEAD)
    Engine.objects.filter(engine_id="e-dead").update(heartbeat_at_ms=0)

    (item,) = viewer_client.get(url("/engines")).json()["items"]

    assert item["display_status"] == "dead"


def test_engine_list_with_silent_engines_is_still_a_fixed_number_of_queries(
    viewer_client: Any, django_assert_max_num_queries: Any
) -> None:
    """Session, user, the engines, and the silent ones' holdings."""
    for n in range(20):
        make_engine(f"e-{n:02}")
    Engine.objects.update(heartbeat_at_ms=now_ms() - SILENT_MS)
    viewer_client.get(url("/engines"))

    with django_assert_max_num_queries(4):
        assert len(viewer_client.get(url("/engines")).json()["items"]) == 20


def test_the_claims_filter_accepts_a_worker_name(viewer_client: Any) -> None:
    make_engine("e-old", status=EngineStatus.STOPPED)
    make_engine("e-new")
    Engine.objects.update(name="engine1@host")
    make_claim("wf-1", engine="e-old")
    make_claim("wf-2", engine="e-new")
    make_claim("wf-3", engine="e-other")

    by_name = viewer_client.get(url("/claims?engine=engine1@host")).json()
    by_id = viewer_client.get(url("/claims?engine=e-other")).json()

    assert [c["workflow_id"] for c in by_name["items"]] == ["wf-1", "wf-2"]
    assert [c["workflow_id"] for c in by_id["items"]] == ["wf-3"]
