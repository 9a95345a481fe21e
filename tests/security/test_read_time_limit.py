"""No read a user can request runs unbounded: each statement of a page or API read stops
after WEFTBOARD_READ_TIMEOUT_MS, and the read answers a clear 503 (an error page, JSON in
the API) logged once as a warning, never a 500 with a traceback. Writes are not cut, and
the limit ends with the request. On both databases: a deliberately slow statement (a
sleep on PostgreSQL, a long recursive count on SQLite) stands for a read that reads too
much."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import pytest
from django.db import OperationalError, connection, transaction
from django.http import JsonResponse
from django.test import Client, RequestFactory, override_settings

from claims.models import ClaimEvent, Workflow, WorkflowClaim
from claims.store.time_limit import is_statement_timeout
from tests import factories
from tests.conftest import _signed_in
from weftboard.read_time_limit import ReadTimeLimitMiddleware

pytestmark = pytest.mark.django_db

TABLE = WorkflowClaim._meta.db_table
SLOW_SECONDS = 3  # how long the slow statement takes when nothing stops it
LIMIT_MS = 200


def slow_statement() -> str:
    if connection.vendor == "postgresql":
        return f"SELECT pg_sleep({SLOW_SECONDS})"
    # About 0.4 s per million rows counted, on a quiet machine.
    return (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10000000)"
        " SELECT count(*) FROM c"
    )


class SlowFirstRead:
    """Runs the slow statement, on the same connection and under whatever limit holds
    there, before the first statement that touches ``table``."""

    def __init__(self, table: str = TABLE) -> None:
        self.table = table
        self.spent = False

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if not self.spent and self.table in sql:
            self.spent = True
            # Its own cursor: a server-side cursor (an export's) would only declare it.
            with context["connection"].cursor() as cursor:
                cursor.execute(slow_statement())
        return execute(sql, params, many, context)


@pytest.fixture
def reader() -> Client:
    return _signed_in(factories.make_user("reader"))


@pytest.fixture
def operator() -> Client:
    return _signed_in(factories.make_user("operator", factories.WRITE_PERMISSIONS))


def timed(request: Any) -> tuple[Any, float]:
    started = time.monotonic()
    with connection.execute_wrapper(SlowFirstRead()):
        response = request()
    return response, time.monotonic() - started


@override_settings(WEFTBOARD_READ_TIMEOUT_MS=LIMIT_MS)
@pytest.mark.parametrize(
    ("path", "headers"),
    [
        ("/claims/", {}),
        ("/claims/", {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "claims-table"}),
    ],
)
def test_a_page_read_past_the_limit_is_a_clear_503_page(reader, caplog, path, headers):
    factories.make_claim("wf-1")
    with caplog.at_level(logging.INFO):
        response, took = timed(lambda: reader.get(path, **headers))

    assert response.status_code == 503
    body = response.content.decode()
    assert "took longer than 200 ms" in body
    assert "WEFTBOARD_READ_TIMEOUT_MS" in body
    assert "Traceback" not in body
    assert took < SLOW_SECONDS - 1
    (warning,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert warning.name == "weftboard.reads"
    assert warning.levelno == logging.WARNING
    assert "read stopped after 200 ms" in warning.getMessage()
    # The connection carries on: the next page answers.
    assert reader.get("/claims/").status_code == 200


@override_settings(WEFTBOARD_READ_TIMEOUT_MS=LIMIT_MS)
def test_an_api_read_past_the_limit_is_a_json_503(reader, caplog):
    factories.make_claim("wf-1")
    with caplog.at_level(logging.INFO):
        response, took = timed(lambda: reader.get("/api/v1/claims"))

    assert response.status_code == 503
    assert response["Content-Type"].startswith("application/json")
    assert "took longer than 200 ms" in response.json()["detail"]
    assert took < SLOW_SECONDS - 1
    (warning,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert warning.name == "weftboard.reads"
    assert warning.exc_info is None
    assert reader.get("/api/v1/claims").json()["items"][0]["workflow_id"] == "wf-1"


@override_settings(WEFTBOARD_READ_TIMEOUT_MS=LIMIT_MS)
def test_a_write_is_not_cut_by_the_read_limit(operator):
    factories.make_workflow("wf-1")
    factories.make_claim("wf-1", epoch=3)

    response, took = timed(
        lambda: operator.post(
            "/api/v1/workflows/wf-1/cancel",
            {"reason": "stuck", "expected_epoch": 3},
            content_type="application/json",
        )
    )

    assert response.status_code == 200, response.content
    assert took >= 1
    assert Workflow.objects.get(workflow_id="wf-1").status == "cancelled"


@override_settings(WEFTBOARD_READ_TIMEOUT_MS=LIMIT_MS)
def test_a_streamed_export_reads_under_a_limit_of_its_own(reader):
    """The audit CSV reads while it streams, after the view has returned."""
    factories.make_claim("wf-1")
    ClaimEvent.objects.create(workflow_id="wf-1", kind="acquired", epoch_after=1, at_ms=1)
    response = reader.get("/audit/?format=csv")
    assert response.status_code == 200

    started = time.monotonic()
    slow = connection.execute_wrapper(SlowFirstRead(ClaimEvent._meta.db_table))
    with slow, pytest.raises(OperationalError) as stopped:
        b"".join(response.streaming_content)

    assert is_statement_timeout(stopped.value)
    assert time.monotonic() - started < SLOW_SECONDS - 1


def test_the_limit_ends_with_the_request(reader):
    """The limit is the request's own (SET LOCAL): the connection's setting is as it was,
    so nothing else that uses it later (an engine behind a pooler) inherits it."""
    if connection.vendor != "postgresql":
        pytest.skip("a PostgreSQL setting")
    factories.make_claim("wf-1")
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        (before,) = cursor.fetchone()
        assert reader.get("/claims/?q=wf").status_code == 200
        assert reader.get("/api/v1/claims").status_code == 200
        cursor.execute("SHOW statement_timeout")
        (after,) = cursor.fetchone()
    assert after == before


@pytest.mark.django_db(transaction=True)
@override_settings(WEFTBOARD_READ_TIMEOUT_MS=LIMIT_MS)
def test_a_read_that_begins_in_a_transaction_of_its_own_is_bounded_there_and_after():
    """PostgreSQL: the limit's transaction opens at the request's first statement; when
    that statement runs inside a transaction the view opened, the limit holds in that
    transaction, and opens for the statements after it."""
    if connection.vendor != "postgresql":
        pytest.skip("the transaction is PostgreSQL's")

    def sleep_stopped() -> bool:
        try:
            with connection.cursor() as cursor:
                cursor.execute(slow_statement())
        except OperationalError as error:
            return is_statement_timeout(error)
        return False

    def view(request: Any) -> JsonResponse:
        with transaction.atomic():
            first = sleep_stopped()
        return JsonResponse({"inside": first, "after": sleep_stopped()})

    middleware = ReadTimeLimitMiddleware(lambda request: view(request))
    request = RequestFactory().get("/a-read")
    middleware.process_view(request, view, (), {})  # as Django's handler calls it first

    started = time.monotonic()
    response = middleware(request)

    assert json.loads(response.content) == {"inside": True, "after": True}
    assert time.monotonic() - started < SLOW_SECONDS
    assert connection.get_autocommit()  # the read's transaction ended with the request
