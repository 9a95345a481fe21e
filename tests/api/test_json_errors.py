"""The API never answers HTML: an unexpected error is a JSON 500 with a request id, sent as
a header too and logged once with its traceback; an unknown path is a JSON 404, a method a
path does not take a JSON 405, and a body Django refuses a JSON 400."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator

import pytest
from django.test import override_settings

from .conftest import post, url

pytestmark = pytest.mark.django_db


class Boom(RuntimeError):
    pass


def clock_falls_over(*args: object, **kwargs: object) -> None:
    raise Boom("the fleet clock fell over")


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def logged() -> Iterator[list[logging.LogRecord]]:
    """Every record of the API's logger, Django's request logger and the root logger."""
    handler = Records()
    loggers = [logging.getLogger(name) for name in ("weftboard.api", "django.request", "")]
    for logger in loggers:
        logger.addHandler(handler)
    yield handler.records
    for logger in loggers:
        logger.removeHandler(handler)


def assert_json(response) -> dict:
    assert response["Content-Type"].startswith("application/json"), response.content
    return response.json()


def test_an_unexpected_error_is_a_json_500_with_a_request_id_logged_once(
    viewer_client, monkeypatch, logged
):
    monkeypatch.setattr("claims.api.engines.fleet_now", clock_falls_over)

    response = viewer_client.get(url("/engines"))

    assert response.status_code == 500
    body = assert_json(response)
    assert set(body) == {"detail", "request_id"}
    request_id = body["request_id"]
    assert re.fullmatch(r"[0-9a-f]{32}", request_id)
    assert response["X-Request-ID"] == request_id
    assert "fell over" not in body["detail"]  # the error's text stays in the log
    carrying = [r for r in logged if request_id in r.getMessage()]
    assert len(carrying) == 1
    [record] = carrying
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], Boom)
    assert "path=/api/v1/engines" in record.getMessage()
    assert [r for r in logged if r.name == "django.request"] == []


def test_each_unexpected_error_gets_its_own_request_id(viewer_client, monkeypatch):
    monkeypatch.setattr("claims.api.engines.fleet_now", clock_falls_over)

    ids = {viewer_client.get(url("/engines")).json()["request_id"] for _ in range(3)}

    assert len(ids) == 3


@pytest.mark.parametrize("path", ["/api/v1/no-such-route", "/api/v1/", "/api/v2/claims", "/api/"])
def test_an_unknown_api_path_is_a_json_404(viewer_client, path):
    response = viewer_client.get(path)

    assert response.status_code == 404
    assert assert_json(response) == {"detail": f"no API route at {path}"}


def test_an_unknown_api_path_is_a_json_404_for_anyone(client):
    response = client.post("/api/v1/no-such-route", {}, content_type="application/json")

    assert response.status_code == 404
    assert "detail" in assert_json(response)


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("delete", url("/engines"), "GET"),
        ("put", url("/workflows/wf-1/cancel"), "POST"),
        ("post", url("/claims"), "GET"),
    ],
)
def test_a_method_a_path_does_not_take_is_a_json_405(viewer_client, method, path, allowed):
    response = getattr(viewer_client, method)(path)

    assert response.status_code == 405
    body = assert_json(response)
    assert allowed in body["detail"]
    assert allowed in response["Allow"]


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1_000)
def test_a_body_over_the_size_limit_is_a_json_400(operator_client):
    response = post(
        operator_client, url("/workflows"), {"workflow_type": "order", "input": "x" * 2_000}
    )

    assert response.status_code == 400
    assert "detail" in assert_json(response)
