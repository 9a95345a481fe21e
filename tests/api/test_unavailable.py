"""What the API answers when what it stands on does not: a database whose answer is lost
gives a JSON 503 that says the write may have landed; a cache that does not answer
leaves the write limit uncounted rather than the operator locked out."""

from __future__ import annotations

import logging

import pytest
from django.db import OperationalError, connection
from django.test import override_settings
from prometheus_client import REGISTRY

from claims.models import Workflow, WorkflowClaim

from .conftest import make_claim, make_workflow, post, wf_url

pytestmark = pytest.mark.django_db

TABLE = WorkflowClaim._meta.db_table


class LoseTheAnswer:
    """Runs the first statement that writes the claim table, then raises as the driver
    does when the session dies before the server's answer arrives."""

    def __init__(self) -> None:
        self.spent = False

    def __call__(self, execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if not self.spent and "UPDATE" in sql.upper() and TABLE in sql:
            self.spent = True
            raise OperationalError("server closed the connection unexpectedly")
        return result


def test_a_lost_database_answer_is_a_json_503_that_says_to_look_first(operator_client):
    make_workflow("wf-1")
    make_claim("wf-1", epoch=3)

    with connection.execute_wrapper(LoseTheAnswer()):
        response = post(operator_client, wf_url("wf-1", "/cancel"), {"reason": "stuck"})

    assert response.status_code == 503
    assert response["Content-Type"].startswith("application/json")
    assert "read the current state before repeating it" in response.json()["detail"]
    assert response["Retry-After"] == "1"
    # The request's transaction rolled back around the raised error.
    assert Workflow.objects.get(workflow_id="wf-1").status == "running"


UNREACHABLE_CACHE = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        # Nothing listens on port 1; the client fails at once.
        "LOCATION": "redis://127.0.0.1:1/0",
        "OPTIONS": {"socket_connect_timeout": 0.5},
    }
}


@override_settings(WEFTBOARD_API_WRITE_RATE="1/min", CACHES=UNREACHABLE_CACHE)
def test_writes_go_through_uncounted_while_the_cache_does_not_answer(operator_client, caplog):
    make_workflow("wf-1")
    make_workflow("wf-2")

    uncounted = REGISTRY.get_sample_value("weftboard_api_writes_uncounted_total") or 0.0
    with caplog.at_level(logging.WARNING, logger="weftboard.api"):
        first = post(operator_client, wf_url("wf-1", "/cancel"), {"reason": "stuck"})
        second = post(operator_client, wf_url("wf-2", "/cancel"), {"reason": "stuck"})

    assert [first.status_code, second.status_code] == [200, 200]
    assert "API write limit not counted: the cache did not answer" in caplog.text
    assert REGISTRY.get_sample_value("weftboard_api_writes_uncounted_total") == uncounted + 2
