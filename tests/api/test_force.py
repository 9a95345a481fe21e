"""Force release and force takeover: CAS on the epoch the operator saw."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from kombu.exceptions import OperationalError as KombuOperationalError

from claims.models import ClaimEvent, EngineStatus

from .conftest import claim_values, make_claim, make_engine, make_workflow, post, wf_url

pytestmark = pytest.mark.django_db

RELEASE = wf_url("wf-1", "/claim/release")
TAKEOVER = wf_url("wf-1", "/claim/takeover")


@pytest.fixture(autouse=True)
def world():
    make_workflow("wf-1")
    make_claim("wf-1", epoch=41, engine="e-1", expires_in_ms=60_000)
    make_engine("e-1")
    make_engine("e-2")


@pytest.fixture
def post_committed(operator_client, django_capture_on_commit_callbacks):
    """Post as the operator, then run what the write left for after its commit (the adopt)."""

    def send(path: str, body: dict[str, object]) -> Any:
        with django_capture_on_commit_callbacks(execute=True):
            return post(operator_client, path, body)

    return send


@pytest.fixture
def adopt_send():
    """The broker boundary: the adopt message is captured instead of sent."""
    with mock.patch("claims.tasks.adopt.apply_async") as send:
        yield send


def unchanged():
    return claim_values("wf-1"), ClaimEvent.objects.count()


def test_force_release_moves_to_the_next_epoch_with_no_holder(operator_client):
    """Release at the epoch seen: epoch + 1, no holder, an audit event with actor and reason."""
    response = post(operator_client, RELEASE, {"expected_epoch": 41, "reason": "  stuck engine "})

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["epoch_before"], body["epoch_after"]) == (41, 42)
    assert body["claim"]["epoch"] == 42
    assert body["claim"]["state"] == "ownerless"
    assert body["adopt_queue"] is None
    assert claim_values("wf-1") == (42, None, None, None, None)
    event = ClaimEvent.objects.get()
    assert (event.kind, event.epoch_before, event.epoch_after) == ("forced_release", 41, 42)
    assert (event.actor, event.reason) == ("operator", "stuck engine")


def test_force_takeover_grants_the_target_and_sends_adopt_to_its_queue(post_committed, adopt_send):
    """Takeover at the epoch seen grants epoch + 1 to the target, then tells its own queue."""
    response = post_committed(
        TAKEOVER, {"expected_epoch": 41, "target_engine_id": "e-2", "reason": "e-1 hung"}
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["epoch_after"] == 42
    assert body["adopt_queue"] == "engine.e-2"
    assert body["claim"]["holder_engine_id"] == "e-2"
    assert body["claim"]["state"] == "live"
    assert claim_values("wf-1")[:3] == (42, "e-2", 42)
    adopt_send.assert_called_once_with(args=("wf-1", 42), queue="engine.e-2", retry=False)
    event = ClaimEvent.objects.get()
    assert (event.kind, event.engine_id, event.actor) == ("forced_takeover", "e-2", "operator")


def test_a_broker_that_is_down_does_not_fail_a_committed_takeover(
    post_committed, adopt_send, caplog
):
    adopt_send.side_effect = KombuOperationalError("Error 111 connecting to 127.0.0.1:6379.")
    response = post_committed(
        TAKEOVER, {"expected_epoch": 41, "target_engine_id": "e-2", "reason": "x"}
    )

    assert response.status_code == 200, response.content
    assert claim_values("wf-1")[:3] == (42, "e-2", 42)
    assert "could not be sent" in caplog.text


def test_adopt_is_not_sent_before_the_commit(operator_client, adopt_send):
    """The message waits for the grant to commit: nothing is sent while it is uncommitted."""
    response = post(
        operator_client, TAKEOVER, {"expected_epoch": 41, "target_engine_id": "e-2", "reason": "x"}
    )

    assert response.status_code == 200
    adopt_send.assert_not_called()  # the test's transaction never commits


@pytest.mark.parametrize("path", [RELEASE, TAKEOVER])
def test_stale_epoch_gets_409_with_the_fresh_state_and_changes_nothing(
    post_committed, adopt_send, path
):
    """An epoch the claim has left answers 409 with epoch, holder and state as they are now."""
    before = unchanged()

    response = post_committed(
        path, {"expected_epoch": 40, "target_engine_id": "e-2", "reason": "stale view"}
    )

    assert response.status_code == 409
    body = response.json()
    assert body["workflow_id"] == "wf-1"
    assert body["expected_epoch"] == 40
    assert "epoch 41" in body["detail"]
    current = body["current"]
    assert (current["epoch"], current["holder_engine_id"], current["state"]) == (41, "e-1", "live")
    assert current["expiry"]["expired"] is False
    assert unchanged() == before
    adopt_send.assert_not_called()


def test_never_claimed_workflow_answers_409_with_no_epoch(operator_client):
    """A workflow that was never claimed has no epoch to match: 409 shows it ownerless."""
    make_workflow("wf-new")

    response = post(operator_client, wf_url("wf-new", "/claim/release"),
                    {"expected_epoch": 1, "reason": "x"})  # fmt: skip

    assert response.status_code == 409
    assert response.json()["current"]["epoch"] is None
    assert response.json()["current"]["state"] == "ownerless"


BAD_BODIES = [
    pytest.param({"expected_epoch": -1, "reason": "x"}, id="negative-epoch"),
    pytest.param({"expected_epoch": 0, "reason": "x"}, id="zero-epoch"),
    pytest.param({"expected_epoch": 41.5, "reason": "x"}, id="fractional-epoch"),
    pytest.param({"expected_epoch": 41.0, "reason": "x"}, id="float-epoch"),
    pytest.param({"expected_epoch": "41", "reason": "x"}, id="string-epoch"),
    pytest.param({"expected_epoch": "abc", "reason": "x"}, id="text-epoch"),
    pytest.param({"expected_epoch": True, "reason": "x"}, id="boolean-epoch"),
    pytest.param({"expected_epoch": None, "reason": "x"}, id="null-epoch"),
    pytest.param({"expected_epoch": 2**53, "reason": "x"}, id="absurd-epoch"),
    pytest.param({"expected_epoch": 10**30, "reason": "x"}, id="huge-epoch"),
    pytest.param({"reason": "x"}, id="missing-epoch"),
    pytest.param({"expected_epoch": 41}, id="missing-reason"),
    pytest.param({"expected_epoch": 41, "reason": ""}, id="empty-reason"),
    pytest.param({"expected_epoch": 41, "reason": "   "}, id="blank-reason"),
    pytest.param({"expected_epoch": 41, "reason": None}, id="null-reason"),
]


@pytest.mark.parametrize("path", [RELEASE, TAKEOVER])
@pytest.mark.parametrize("body", BAD_BODIES)
def test_bad_epochs_and_missing_reasons_get_422_and_change_nothing(
    operator_client, adopt_send, path, body
):
    """Malformed epochs and missing reasons are refused with 422 before anything is written."""
    before = unchanged()

    response = post(operator_client, path, {"target_engine_id": "e-2", **body})

    assert response.status_code == 422, response.content
    assert "detail" in response.json()
    assert unchanged() == before
    adopt_send.assert_not_called()


@pytest.mark.parametrize(
    "target",
    [
        pytest.param("e-nope", id="unknown"),
        pytest.param("e-dead", id="dead"),
        pytest.param("e-stopped", id="stopped"),
        pytest.param("", id="empty"),
        pytest.param("x" * 256, id="too-long"),
    ],
)
def test_a_target_that_is_not_an_active_engine_gets_422(operator_client, adopt_send, target):
    """Takeover only goes to an active engine: anything else is bad input (422)."""
    make_engine("e-dead", status=EngineStatus.DEAD)
    make_engine("e-stopped", status=EngineStatus.STOPPED)
    before = unchanged()

    response = post(
        operator_client, TAKEOVER, {"expected_epoch": 41, "target_engine_id": target, "reason": "x"}
    )

    assert response.status_code == 422
    assert unchanged() == before
    adopt_send.assert_not_called()


def test_takeover_to_an_engine_without_a_queue_leaves_it_to_reclaim(post_committed, adopt_send):
    """An active engine with no queue gets the claim, but no message can reach it."""
    make_engine("e-local", queue="")

    response = post_committed(
        TAKEOVER, {"expected_epoch": 41, "target_engine_id": "e-local", "reason": "x"}
    )

    assert response.status_code == 200
    assert response.json()["adopt_queue"] is None
    adopt_send.assert_not_called()


@pytest.mark.parametrize("path", ["/claim/release", "/claim/takeover"])
def test_unknown_workflow_gets_404(operator_client, path):
    """A forced action on an id with no workflow answers 404 and writes nothing."""
    before = unchanged()

    response = post(
        operator_client,
        wf_url("nope", path),
        {"expected_epoch": 1, "target_engine_id": "e-2", "reason": "x"},
    )

    assert response.status_code == 404
    assert unchanged() == before


@pytest.mark.parametrize("workflow_id", ["x" * 256, "a\x00b", "a\nb"])
@pytest.mark.parametrize("path", ["/claim/release", "/claim/takeover"])
def test_bad_ids_get_422(operator_client, workflow_id, path):
    """Ids over 255 characters or with control characters are refused with 422."""
    before = unchanged()

    response = post(
        operator_client,
        wf_url(workflow_id, path),
        {"expected_epoch": 1, "target_engine_id": "e-2", "reason": "x"},
    )

    assert response.status_code == 422
    assert unchanged() == before


def test_unreadable_json_gets_400(operator_client):
    """A body that is not JSON answers 400."""
    response = operator_client.post(RELEASE, "{not json", content_type="application/json")

    assert response.status_code == 400
    assert "detail" in response.json()


def test_releasing_an_ownerless_claim_is_409_and_changes_nothing(operator_client):
    """As the page refuses it: no holder at the epoch seen, nothing to release."""
    assert post(operator_client, RELEASE, {"expected_epoch": 41, "reason": "r"}).status_code == 200
    before = unchanged()

    response = post(operator_client, RELEASE, {"expected_epoch": 42, "reason": "again"})

    assert response.status_code == 409
    assert "ownerless" in response.json()["detail"]
    assert unchanged() == before


@pytest.mark.parametrize("status", ["completed", "failed", "cancelled"])
def test_a_takeover_of_a_finished_workflow_is_409_and_changes_nothing(
    operator_client, adopt_send, status
):
    from claims.models import Workflow

    Workflow.objects.filter(workflow_id="wf-1").update(status=status)
    before = unchanged()

    response = post(
        operator_client,
        TAKEOVER,
        {"expected_epoch": 41, "target_engine_id": "e-2", "reason": "r"},
    )

    assert response.status_code == 409
    assert status in response.json()["detail"]
    assert unchanged() == before
    adopt_send.assert_not_called()
