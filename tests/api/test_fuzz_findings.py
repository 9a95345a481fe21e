"""What the API fuzz (python -m fuzz) found beyond the reviewed findings, each kept fixed."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from claims.models import BackfillJob, Workflow
from tests import factories
from weftboard.api import api

from .conftest import make_workflow, post, url, wf_url

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("body", ["null", "[null, null]", "7", '"text"'])
def test_a_body_that_is_not_an_object_schedules_nothing(operator_client, body):
    """ninja's schemas read fields off anything, so a list or a null once scheduled a
    backfill with every field absent."""
    response = operator_client.post(url("/backfills"), body, content_type="application/json")

    assert response.status_code == 422
    assert "JSON object" in str(response.json()["detail"])
    assert not BackfillJob.objects.exists()


def test_an_optional_body_may_still_be_null(operator_client):
    """Cancel's body may be left out: null passes the body rule and meets the reason rule."""
    factories.make_workflow("wf-1")

    response = operator_client.post(
        url("/workflows/wf-1/cancel"), "null", content_type="application/json"
    )

    assert response.status_code == 422
    assert "a reason is required" in response.json()["detail"]


def test_a_run_time_with_an_offset_postgresql_cannot_store_is_stored_in_utc(operator_client):
    """Python reads offsets up to 23:59, PostgreSQL stores up to 15:59: the time was sent
    to the database as given, a 500 there."""
    response = post(operator_client, url("/backfills"), {"run_at": "4094-04-28T18:30:05+22:50"})

    assert response.status_code == 201
    assert response.json()["run_at"] == "4094-04-27T19:40:05Z"
    assert BackfillJob.objects.get().run_at == datetime(4094, 4, 27, 19, 40, 5, tzinfo=UTC)


def test_an_empty_workflow_id_to_start_under_is_refused_by_the_schema(operator_client):
    response = post(
        operator_client, url("/workflows"), {"workflow_type": "order", "workflow_id": ""}
    )

    assert response.status_code == 422
    assert not Workflow.objects.exists()


@pytest.mark.parametrize("route", ["claim/release", "claim/takeover"])
def test_a_forced_actions_409_is_documented_as_either_answer(route):
    """A refused release (an ownerless claim) answers 409 with a detail alone; the schema
    promised the stale-epoch body only."""
    schema = api.get_openapi_schema()
    path = next(p for p in schema["paths"] if p.endswith(f"/{route}"))
    answer = schema["paths"][path]["post"]["responses"][409]["content"]["application/json"]
    refs = {option["$ref"].rsplit("/", 1)[-1] for option in answer["schema"]["anyOf"]}

    assert refs == {"StaleEpochOut", "ErrorOut"}


@pytest.mark.parametrize("action", ["cancel", "suspend", "resume"])
@pytest.mark.parametrize("seen", [False, True])
def test_a_json_boolean_is_not_an_epoch_the_caller_saw(operator_client, action, seen):
    """``false`` would read as epoch 0 and ``true`` as 1 if booleans passed for integers:
    refused (422), and the workflow is left as it was."""
    make_workflow("wf-bool")
    response = post(
        operator_client,
        wf_url("wf-bool", f"/{action}"),
        {"reason": "fuzz finding", "expected_epoch": seen},
    )
    assert response.status_code == 422, response.content
    assert Workflow.objects.get(workflow_id="wf-bool").status == "running"


@pytest.mark.parametrize(
    "query",
    [
        "/redrives?engine=engine-1&engine=engine-2",
        "/claims?prefix=a&prefix=b",
        "/claims?limit=1&limit=2",
        "/engines?status=active&status=dead",
    ],
)
def test_a_query_parameter_given_twice_is_refused(operator_client, query):
    """Ninja kept the last of a repeated parameter, so a filter the caller gave first was
    quietly dropped and a list answered for another engine than the one asked about."""
    response = operator_client.get(url(query))

    assert response.status_code == 422
    assert response.json()["detail"].endswith("is given 2 times; give it once")


def test_each_query_parameter_once_is_answered(operator_client):
    response = operator_client.get(url("/claims?prefix=a&limit=1"))

    assert response.status_code == 200
