"""The frame's engine-floor alert polls a fragment of its own, so a page left open learns
that the fleet stopped within one refresh."""

from __future__ import annotations

from typing import Any

import pytest

from claims.models import Engine, EngineStatus

from .conftest import htmx, make_engine

pytestmark = pytest.mark.django_db

URL = "/engine-floor/"


def test_the_fragment_carries_the_alert_once_no_engine_runs(operator_client: Any) -> None:
    make_engine("e-ok")
    quiet = operator_client.get(URL, **htmx("engine-floor")).content.decode()
    assert 'id="engine-floor"' in quiet
    assert "engine-floor-alert" not in quiet

    Engine.objects.filter(engine_id="e-ok").update(status=EngineStatus.STOPPED)
    loud = operator_client.get(URL, **htmx("engine-floor")).content.decode()

    assert 'id="engine-floor-alert"' in loud
    assert "No engine is running" in loud
    assert "<html" not in loud  # a fragment, not a page


def test_every_page_polls_the_fragment(operator_client: Any) -> None:
    make_engine("e-ok")

    html = operator_client.get("/claims/").content.decode()

    assert f'id="engine-floor" class="alerts" data-live hx-get="{URL}"' in html


def test_signed_out_the_fragment_sends_to_the_login_page(client: Any) -> None:
    response = client.get(URL)

    assert response.status_code == 302
    assert response["Location"].startswith("/login/")
