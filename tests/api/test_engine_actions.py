"""The API's actions on a whole engine: release all its claims (a compare-and-swap per
claim, 409 per row for one that moved on), drain and undrain."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest

from claims.models import ClaimEvent, Engine, EngineEvent, WorkflowClaim
from tests import factories

from .conftest import (
    bearer,
    claim_values,
    make_claim,
    make_workflow,
    post,
    url,
)

pytestmark = pytest.mark.django_db

RELEASE = url("/engines/e-silent/claims/release")
DRAIN = url("/engines/e-silent/drain")
UNDRAIN = url("/engines/e-silent/undrain")


@pytest.fixture(autouse=True)
def world():
    factories.make_silent_engine_scene()


@pytest.fixture
def drainer(django_user_model: Any) -> Any:
    return factories.make_user("dana", (*factories.WRITE_PERMISSIONS, "drain_engine"))


@pytest.fixture
def drainer_client(drainer: Any) -> Any:
    from tests.conftest import _signed_in

    return _signed_in(drainer)


SEEN = [
    {"workflow_id": "wf-1", "expected_epoch": 4},
    {"workflow_id": "wf-2", "expected_epoch": 7},
    {"workflow_id": "wf-3", "expected_epoch": 2},
]


def test_bulk_release_answers_per_claim_and_leaves_a_moved_claim_alone(operator_client):
    # wf-2 moved on (taken over by e-2) after the operator looked.
    WorkflowClaim.objects.filter(workflow_id="wf-2").update(
        epoch=8, holder_engine_id="e-2", holder_epoch=8
    )

    response = post(operator_client, RELEASE, {"reason": "engine is silent", "claims": SEEN})

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["released"], body["moved_on"]) == (2, 1)
    rows = {r["workflow_id"]: r for r in body["results"]}
    assert (rows["wf-1"]["status"], rows["wf-1"]["epoch_after"]) == (200, 5)
    assert (rows["wf-2"]["status"], rows["wf-2"]["outcome"]) == (409, "moved")
    assert rows["wf-2"]["current_epoch"] == 8
    assert claim_values("wf-2")[:2] == (8, "e-2")  # untouched
    assert claim_values("wf-1")[:2] == (5, None)
    events = ClaimEvent.objects.filter(kind="forced_release")
    assert sorted(e.workflow_id for e in events) == ["wf-1", "wf-3"]
    assert {(e.actor, e.reason) for e in events} == {("operator", "engine is silent")}


def test_a_claim_another_engine_holds_at_the_epoch_named_is_not_released(operator_client):
    make_workflow("wf-other")
    make_claim("wf-other", epoch=9, engine="e-2")

    response = post(
        operator_client,
        RELEASE,
        {"reason": "r", "claims": [{"workflow_id": "wf-other", "expected_epoch": 9}]},
    )

    assert response.json()["results"][0]["status"] == 409
    assert claim_values("wf-other")[:2] == (9, "e-2")


@pytest.mark.parametrize(
    "body",
    [
        {"reason": "r", "claims": []},
        {"reason": "", "claims": SEEN},
        {"reason": "r", "claims": [{"workflow_id": "wf-1", "expected_epoch": "4"}]},
        {"reason": "r", "claims": [{"workflow_id": "wf-1", "expected_epoch": 4}] * 2},
        {"reason": "r", "claims": [*SEEN, {"workflow_id": "bad\u0000id", "expected_epoch": 1}]},
        {
            "reason": "r",
            "claims": [{"workflow_id": f"w{n}", "expected_epoch": 1} for n in range(1001)],
        },
    ],
    ids=["empty", "no-reason", "string-epoch", "duplicate", "bad-id", "over-1000"],
)
def test_bad_input_is_a_422_and_releases_nothing(operator_client, body):
    response = post(operator_client, RELEASE, body)

    assert response.status_code == 422, response.content
    assert ClaimEvent.objects.count() == 0
    assert claim_values("wf-1")[:2] == (4, "e-silent")


def test_bulk_release_needs_force_claim_and_obeys_read_only(
    viewer_client, operator_client, settings
):
    assert post(viewer_client, RELEASE, {"reason": "r", "claims": SEEN}).status_code == 403
    settings.WEFTBOARD_READ_ONLY = "maintenance"
    assert post(operator_client, RELEASE, {"reason": "r", "claims": SEEN}).status_code == 403
    assert ClaimEvent.objects.count() == 0


def test_bulk_release_of_an_unknown_engine_is_a_404(operator_client):
    response = post(
        operator_client, url("/engines/nope/claims/release"), {"reason": "r", "claims": SEEN}
    )
    assert response.status_code == 404


def test_a_read_token_cannot_bulk_release(operator, token_for, client):
    response = post(
        client, RELEASE, {"reason": "r", "claims": SEEN}, headers=bearer(token_for(operator))
    )
    assert response.status_code == 403


def test_drain_and_undrain_are_audited_and_told_on_the_engine_queue(
    drainer_client, django_capture_on_commit_callbacks
):
    with (
        mock.patch("claims.tasks.drain.apply_async") as drain_send,
        django_capture_on_commit_callbacks(execute=True),
    ):
        response = post(drainer_client, DRAIN, {"reason": "rolling restart"})

    assert response.status_code == 200, response.content
    assert response.json()["engine"]["draining"] is True
    assert response.json()["queue_told"] == "engine.e-silent"
    drain_send.assert_called_once_with(args=("e-silent",), queue="engine.e-silent", retry=False)
    assert post(drainer_client, DRAIN, {"reason": "again"}).status_code == 409

    with mock.patch("claims.tasks.undrain.apply_async"):
        response = post(drainer_client, UNDRAIN, {"reason": "done"})
    assert response.status_code == 200
    assert Engine.objects.get(engine_id="e-silent").drain_requested_at_ms is None
    assert list(EngineEvent.objects.order_by("id").values_list("kind", "actor", "reason")) == [
        ("drain", "dana", "rolling restart"),
        ("undrain", "dana", "done"),
    ]
    assert post(drainer_client, UNDRAIN, {"reason": "again"}).status_code == 409


def test_drain_needs_its_own_permission(operator_client):
    """claims.force_claim is not enough: draining an engine is claims.drain_engine."""
    assert post(operator_client, DRAIN, {"reason": "r"}).status_code == 403
    assert EngineEvent.objects.count() == 0


def test_drain_of_an_engine_that_is_not_live_is_a_409(drainer_client):
    Engine.objects.filter(engine_id="e-silent").update(status="dead")
    assert post(drainer_client, DRAIN, {"reason": "r"}).status_code == 409
    assert post(drainer_client, url("/engines/nope/drain"), {"reason": "r"}).status_code == 404
    assert EngineEvent.objects.count() == 0


def test_bulk_release_reads_the_batchs_rows_once_before_releasing_each(operator_client):
    """One read of every named row up front; each release then reads only the row it
    compares and swaps on, so three claims cost three single-row reads, not six."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from claims.store.sql.claim_rows import claim_statements

    single_row_read = claim_statements().read
    with CaptureQueriesContext(connection) as queries:
        response = post(operator_client, RELEASE, {"reason": "engine is silent", "claims": SEEN})

    assert response.status_code == 200
    reads = [q["sql"] for q in queries.captured_queries if _is_read(q["sql"], single_row_read)]
    assert len(reads) == len(SEEN)


def _is_read(sql: str, single_row_read: str) -> bool:
    """Whether a logged statement is the single-row claim read (logged with its value)."""
    return sql.startswith(single_row_read.split("%s")[0])
