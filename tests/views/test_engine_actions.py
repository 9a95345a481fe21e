"""The engine page's actions: release all its claims (one confirmation listing each claim
at the epoch seen; the result lists what was released and what had moved on, 409 per row),
drain and undrain (their own permission, audited, shown on the engine and audit pages)."""

from __future__ import annotations

from collections.abc import Callable
from unittest import mock

import pytest
from django.test import Client

from claims.models import ClaimEvent, Engine, EngineEvent, WorkflowClaim
from claims.selectors.engines.actions import (
    engine_drain_requested,
    engine_events,
    engine_get,
    engine_held_claims,
)
from tests import factories

from .conftest import make_claim, make_workflow

pytestmark = pytest.mark.django_db

RELEASE = "/engine-release/e-silent"
DRAIN = "/engine-drain/e-silent"
UNDRAIN = "/engine-undrain/e-silent"


@pytest.fixture(autouse=True)
def world():
    factories.make_silent_engine_scene()


@pytest.fixture
def drainer_client(signed_in_as: Callable[..., Client]) -> Client:
    return signed_in_as("dana", "force_claim", "drain_engine")


@pytest.fixture(autouse=True)
def no_broker():
    with (
        mock.patch("claims.tasks.drain.apply_async"),
        mock.patch("claims.tasks.undrain.apply_async"),
    ):
        yield


SEEN = ["wf-1:4", "wf-2:7", "wf-3:2"]


def test_the_engine_page_offers_the_actions(operator_client):
    html = operator_client.get("/engines/e-silent/").content.decode()

    assert 'href="/engine-release/e-silent"' in html
    assert "Release all claims of this engine…" in html
    assert 'href="/engine-drain/e-silent"' in html


def test_the_confirmation_lists_each_claim_at_the_epoch_seen(operator_client):
    html = operator_client.get(RELEASE).content.decode()

    for value in SEEN:
        assert f'name="claim" value="{value}"' in html
    assert "Release 3 claims" in html
    assert 'name="reason"' in html


def test_release_lists_what_was_released_and_what_had_moved_on(operator_client):
    WorkflowClaim.objects.filter(workflow_id="wf-2").update(
        epoch=8, holder_engine_id="e-2", holder_epoch=8
    )

    response = operator_client.post(RELEASE, {"claim": SEEN, "reason": "engine is silent"})

    assert response.status_code == 200
    html = response.content.decode()
    assert "Result: 2 released, 3 asked" in html
    assert html.count('data-status="200"') == 2
    assert html.count('data-status="409"') == 1
    assert "moved on: now at epoch 8; left alone" in html
    assert WorkflowClaim.objects.get(workflow_id="wf-2").holder_engine_id == "e-2"
    events = ClaimEvent.objects.filter(kind="forced_release")
    assert {(e.workflow_id, e.actor, e.reason) for e in events} == {
        ("wf-1", "alice", "engine is silent"),
        ("wf-3", "alice", "engine is silent"),
    }


@pytest.mark.parametrize(
    "data",
    [
        {"claim": ["wf-1"], "reason": "r"},
        {"claim": ["wf-1:x"], "reason": "r"},
        {"claim": [], "reason": "r"},
        {"claim": ["wf-1:4", "wf-1:4"], "reason": "r"},
        {"claim": [f"w{n}:1" for n in range(1001)], "reason": "r"},
    ],
    ids=["no-epoch", "bad-epoch", "none", "duplicate", "over-1000"],
)
def test_bad_input_is_a_400_and_changes_nothing(operator_client, data):
    assert operator_client.post(RELEASE, data).status_code == 400
    assert ClaimEvent.objects.count() == 0


def test_a_missing_reason_is_shown_beside_the_field(operator_client):
    response = operator_client.post(RELEASE, {"claim": SEEN, "reason": " "})

    assert response.status_code == 400
    assert 'aria-describedby="reason-error"' in response.content.decode()
    assert ClaimEvent.objects.count() == 0


def test_release_needs_the_force_permission_and_obeys_read_only(
    viewer_client, operator_client, settings
):
    assert (
        "you need the permission claims.force_claim" in viewer_client.get(RELEASE).content.decode()
    )
    assert viewer_client.post(RELEASE, {"claim": SEEN, "reason": "r"}).status_code == 403
    settings.WEFTBOARD_READ_ONLY = "maintenance window"
    assert operator_client.post(RELEASE, {"claim": SEEN, "reason": "r"}).status_code == 403
    assert ClaimEvent.objects.count() == 0


def test_an_unknown_engine_is_a_404(operator_client):
    assert operator_client.get("/engine-release/nope").status_code == 404
    assert operator_client.get("/engine-drain/nope").status_code == 404


def test_drain_shows_progress_and_undrain_puts_it_back(drainer_client):
    response = drainer_client.post(DRAIN, {"reason": "rolling restart"})

    assert response.status_code == 303
    assert response["Location"] == "/engines/e-silent/"
    html = drainer_client.get("/engines/e-silent/").content.decode()
    assert "draining: 3 claims left" in html
    assert 'href="/engine-undrain/e-silent"' in html
    assert "rolling restart" in html  # the engine-level audit on its page
    assert "rolling restart" in drainer_client.get("/audit/").content.decode()

    assert drainer_client.post(UNDRAIN, {"reason": "done"}).status_code == 303
    html = drainer_client.get("/engines/e-silent/").content.decode()
    assert "draining:" not in html
    assert list(EngineEvent.objects.values_list("kind", flat=True).order_by("id")) == [
        "drain",
        "undrain",
    ]


def test_drain_needs_its_permission(operator_client):
    assert (
        "you need the permission claims.drain_engine" in operator_client.get(DRAIN).content.decode()
    )
    assert operator_client.post(DRAIN, {"reason": "r"}).status_code == 403
    assert Engine.objects.get(engine_id="e-silent").drain_requested_at_ms is None


def test_drain_twice_is_a_409(drainer_client):
    drainer_client.post(DRAIN, {"reason": "r"})
    assert drainer_client.post(DRAIN, {"reason": "r"}).status_code == 409
    assert EngineEvent.objects.count() == 1


def test_the_new_selectors_cost_one_query_each(django_assert_max_num_queries):
    for n in range(20):
        make_workflow(f"wf-x{n}")
        make_claim(f"wf-x{n}", engine="e-silent")
        EngineEvent.objects.create(
            engine_id="e-silent", kind="drain", actor="a", reason="r", at_ms=n
        )
    with django_assert_max_num_queries(1):
        assert len(engine_held_claims("e-silent", limit=1_000).items) == 23
    with django_assert_max_num_queries(1):
        assert len(engine_events("e-silent")) == 20
    with django_assert_max_num_queries(1):
        assert engine_drain_requested("e-silent") is False
    with django_assert_max_num_queries(1):
        assert engine_get("e-silent") is not None


def test_held_claims_are_bounded_by_the_batch(django_assert_max_num_queries):
    held = engine_held_claims("e-silent", limit=2)
    assert ([c.workflow_id for c in held.items], held.truncated) == (["wf-1", "wf-2"], True)


def test_the_audit_filtered_by_worker_name_shows_that_workers_drains(drainer_client):
    """The audit's engine filter takes an id or a worker name; the drains and undrains it
    shows beside the claim events follow the same filter."""
    Engine.objects.filter(engine_id="e-silent").update(name="engine7@host")
    factories.make_engine("e-other", name="engine8@host")
    drainer_client.post(DRAIN, {"reason": "rolling restart"})
    EngineEvent.objects.create(
        engine_id="e-other", kind="drain", actor="a", reason="not this one", at_ms=1
    )

    html = drainer_client.get("/audit/", {"engine": "engine7@host"}).content.decode()

    assert "rolling restart" in html
    assert "not this one" not in html
