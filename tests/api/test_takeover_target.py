"""A forced takeover never picks a draining engine: it would only release the claim again
at its next tick. The API refuses it (422) and changes nothing; the pages do not offer it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest

from claims.models import ClaimEvent, Engine
from claims.selectors.engines.listing import live_engine_ids

from .conftest import claim_values, make_claim, make_engine, make_workflow, post, wf_url

pytestmark = pytest.mark.django_db

TAKEOVER = wf_url("wf-1", "/claim/takeover")


@pytest.fixture
def adopt_send() -> Iterator[mock.MagicMock]:
    with mock.patch("claims.tasks.adopt.apply_async") as send:
        yield send


@pytest.fixture(autouse=True)
def world() -> None:
    make_workflow("wf-1")
    make_claim("wf-1", epoch=41, engine="e-1", expires_in_ms=60_000)
    make_engine("e-1")
    make_engine("e-2")
    Engine.objects.filter(engine_id="e-2").update(drain_requested_at_ms=1)


def test_a_draining_engine_is_refused_as_a_takeover_target(
    operator_client: Any, adopt_send: Any
) -> None:
    before = claim_values("wf-1")

    response = post(
        operator_client,
        TAKEOVER,
        {"expected_epoch": 41, "target_engine_id": "e-2", "reason": "e-1 hung"},
    )

    assert response.status_code == 422, response.content
    assert response.json()["detail"] == "engine 'e-2' is draining: undrain it first"
    assert claim_values("wf-1") == before
    assert not ClaimEvent.objects.exists()
    adopt_send.assert_not_called()


def test_the_takeover_form_offers_only_engines_that_are_not_draining() -> None:
    assert live_engine_ids() == ["e-1"]

    Engine.objects.filter(engine_id="e-2").update(drain_requested_at_ms=None)

    assert live_engine_ids() == ["e-1", "e-2"]
