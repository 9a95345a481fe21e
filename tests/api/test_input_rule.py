"""One input rule for operator text and identifiers: control characters and NUL bytes get a
JSON 422, never a server error, on either database, and change nothing."""

from __future__ import annotations

import pytest

from claims.models import ClaimEvent, Workflow

from .conftest import make_claim, make_workflow, post, url, wf_url

pytestmark = pytest.mark.django_db

BAD = ["a\x00b", "a\x1bb", "a\u200bb"]  # NUL, escape, a zero-width (format) character


@pytest.mark.parametrize("text", BAD)
@pytest.mark.parametrize("name", ["prefix", "cursor", "engine"])
def test_claim_filters_with_control_characters_get_422(viewer_client, name, text):
    response = viewer_client.get(url("/claims"), {name: text})

    assert response.status_code == 422
    assert "control characters" in str(response.json()["detail"])


@pytest.mark.parametrize("text", BAD)
def test_the_redrive_engine_filter_with_control_characters_gets_422(viewer_client, text):
    assert viewer_client.get(url("/redrives"), {"engine": text}).status_code == 422


@pytest.mark.parametrize("text", ["stuck\x00", "stuck\x1b[31m", "\x07"])
@pytest.mark.parametrize("action", ["/claim/release", "/claim/takeover", "/cancel"])
def test_a_reason_with_control_characters_gets_422_and_changes_nothing(
    operator_client, action, text
):
    make_workflow("wf-1")
    make_claim("wf-1", epoch=3, engine="e-1", expires_in_ms=-120_000)
    body = {"expected_epoch": 3, "reason": text, "target_engine_id": "e-1"}

    response = post(operator_client, wf_url("wf-1", action), body)

    assert response.status_code == 422
    assert Workflow.objects.get().status == "running"
    assert not ClaimEvent.objects.exists()


def test_a_reason_may_run_over_several_lines(operator_client):
    make_workflow("wf-1")

    response = post(operator_client, wf_url("wf-1", "/cancel"), {"reason": "line one\n\tline two"})

    assert response.status_code == 200
    assert ClaimEvent.objects.get().reason == "line one\n\tline two"


@pytest.mark.parametrize("text", BAD)
def test_a_takeover_target_with_control_characters_gets_422(operator_client, text):
    make_workflow("wf-1")
    make_claim("wf-1", epoch=3)
    body = {"expected_epoch": 3, "reason": "r", "target_engine_id": text}

    assert post(operator_client, wf_url("wf-1", "/claim/takeover"), body).status_code == 422


def start_order(client, payload):
    """Start an "order" workflow through the API with ``payload`` as its input."""
    return post(client, url("/workflows"), {"workflow_type": "order", "input": payload})


def assert_refused_unstored(response, *, naming: str) -> None:
    """A 422 whose detail names what is wrong, and no workflow was stored."""
    assert response.status_code == 422
    assert naming in str(response.json()["detail"])
    assert not Workflow.objects.exists()


@pytest.mark.parametrize(
    "payload",
    [{"note": "nul\x00here"}, {"nul\x00key": 1}, ["deep", ["nul\x00"]], "top\x00level"],
)
def test_a_workflow_input_holding_a_nul_gets_422(operator_client, payload):
    assert_refused_unstored(start_order(operator_client, payload), naming="NUL")


@pytest.mark.parametrize("payload", [{"note": "half \ud800 pair"}, {"\udfff": 1}, ["\ud83d"]])
def test_a_workflow_input_holding_a_lone_surrogate_gets_422(operator_client, payload):
    """A "\\ud800" escape without its pair: UTF-8 cannot encode it, PostgreSQL cannot store it."""
    assert_refused_unstored(start_order(operator_client, payload), naming="surrogate")


def test_a_workflow_input_with_a_whole_surrogate_pair_is_an_emoji_and_welcome(operator_client):
    response = start_order(operator_client, {"note": "🚀"})

    assert response.status_code == 201
