"""Silent engines on the pages, the every-page alert when too few engines run, and engines
shown and filtered by their worker name."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from claims.models import EngineStatus

from .conftest import RENEW_MS, TTL_MS, htmx, make_claim, make_engine, now_ms

pytestmark = pytest.mark.django_db

SILENT_MS = TTL_MS + 2 * RENEW_MS + 1_000  # past TTL + 2 x renew interval
FLOOR_TITLE = "No engine is running"


def silent_engine(engine_id: str = "e-quiet", **fields: Any) -> Any:
    return make_engine(engine_id, heartbeat_at_ms=now_ms() - SILENT_MS, **fields)


def test_engines_page_shows_a_silent_engine_in_red_with_its_takeover(operator_client: Any) -> None:
    silent_engine(name="engine1@host")
    make_claim("wf-1", engine="e-quiet", expires_in_ms=-1_000)

    html = operator_client.get("/engines/", **htmx("engines-live")).content.decode()

    assert '<span class="badge badge--silent">silent</span>' in html
    assert "<small>takeover <time" in html  # its claim's expiry plus grace, still ahead
    assert 'href="/claims/?engine=e-quiet">1</a>' in html
    assert "<small>engine1@host</small>" in html


def test_engines_page_folds_stopped_and_dead_engines_into_history(operator_client: Any) -> None:
    make_engine("e-dead", status=EngineStatus.DEAD, heartbeat_at_ms=0)
    make_engine("e-stopped", status=EngineStatus.STOPPED)
    make_engine("e-live")

    html = operator_client.get("/engines/").content.decode()

    history = html.index('id="engine-history"')
    assert html.index("/engines/e-live/") < history
    assert history < html.index("/engines/e-dead/")
    assert history < html.index("/engines/e-stopped/")
    assert "History: 2 stopped or dead engines, kept 7 days" in html


def test_engine_page_shows_silent_its_name_and_the_claims_it_holds(operator_client: Any) -> None:
    silent_engine(name="engine1@host", pid=4242)
    make_claim("wf-1", engine="e-quiet")

    html = operator_client.get("/engines/e-quiet/").content.decode()

    assert html.count('<span class="badge badge--silent">silent</span>') == 2  # head and card
    assert "<strong>engine1@host</strong>" in html
    assert "pid 4242" in html
    assert "1 claim held, takeover-eligible" in html


def test_overview_counts_silent_engines(operator_client: Any) -> None:
    silent_engine()
    make_engine("e-ok")

    html = operator_client.get("/", **htmx()).content.decode()

    assert '<span class="kpi__value">1</span><span class="kpi__label">silent</span>' in html


@pytest.mark.parametrize("path", ["/", "/claims/", "/engines/", "/redrives/", "/audit/"])
def test_every_page_alerts_when_no_engine_runs(operator_client: Any, path: str) -> None:
    silent_engine()  # silent engines do not count

    html = operator_client.get(path).content.decode()

    assert 'id="engine-floor-alert"' in html
    assert FLOOR_TITLE in html


def test_no_alert_with_enough_engines_and_one_below_the_minimum(
    operator_client: Any, settings: Any
) -> None:
    make_engine("e-ok")
    assert FLOOR_TITLE not in operator_client.get("/engines/").content.decode()

    settings.WEFTBOARD_MIN_ENGINES = 2
    html = operator_client.get("/engines/").content.decode()

    assert "Only 1 of at least 2 engine(s) running" in html


def test_the_floor_alert_costs_one_query_and_fragments_none(operator_client: Any) -> None:
    make_engine("e-ok")
    operator_client.get("/redrives/")  # calibrate the fleet clock

    def floor_queries(**headers: str) -> int:
        with CaptureQueriesContext(connection) as queries:
            operator_client.get("/redrives/", **headers)
        return sum('FROM "claims_engine"' in q["sql"] and "COUNT" in q["sql"] for q in queries)

    assert floor_queries() == 1
    assert floor_queries(**htmx()) == 0


def test_signed_out_pages_read_no_engines(client: Any) -> None:
    with CaptureQueriesContext(connection) as queries:
        client.get("/login/")
    assert not any("claims_engine" in q["sql"] for q in queries)


def test_engines_show_their_name_and_pid_beside_the_id(operator_client: Any) -> None:
    make_engine("e-1", name="engine1@host", pid=4242)
    make_claim("wf-1", engine="e-1")

    html = operator_client.get("/claims/", **htmx()).content.decode()

    assert '<span class="engine-label">engine1@host · pid 4242</span>' in html


def test_the_claims_filter_accepts_a_worker_name(operator_client: Any) -> None:
    make_engine("e-old", name="engine1@host", status=EngineStatus.STOPPED)
    make_engine("e-new", name="engine1@host")
    make_engine("e-other", name="engine2@host")
    for engine_id in ("e-old", "e-new", "e-other"):
        make_claim(f"wf-{engine_id}", engine=engine_id)

    html = operator_client.get("/claims/?engine=engine1@host", **htmx()).content.decode()

    assert "wf-e-old" in html
    assert "wf-e-new" in html
    assert "wf-e-other" not in html


def test_a_status_filter_for_dead_engines_lists_them_without_an_empty_row(
    operator_client: Any,
) -> None:
    make_engine("e-dead", status=EngineStatus.DEAD, heartbeat_at_ms=0)

    html = operator_client.get("/engines/?status=dead", **htmx()).content.decode()

    assert "/engines/e-dead/" in html
    assert "No dead engine." not in html
