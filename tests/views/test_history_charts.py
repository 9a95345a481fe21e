"""The overview and the engine page draw their charts from the kept history at once."""

from __future__ import annotations

import pytest

from claims.models import FleetSnapshotHistory

from .conftest import htmx, make_engine, now_ms

pytestmark = pytest.mark.django_db

MINUTE_MS = 60_000


@pytest.fixture
def history():
    """Ten minutes of snapshots: 6 acquisitions a minute (2 of them e-1's), e-1 holding 4
    claims."""
    now = now_ms()
    for n in range(10, -1, -1):
        FleetSnapshotHistory.objects.create(
            taken_at_ms=now - n * MINUTE_MS - 1_000,
            data={
                "counters": {"acquired": 6 * (10 - n), "renewal_failures": 0},
                "by_state": {"live": 4, "ownerless": 1},
                "held": {"e-1": 4},
                "passes": {"e-1": {"renew": 12.0, "reclaim": 30.0}},
                "slowest": {"renew": 12.0, "reclaim": 30.0},
                "engine_counters": {"e-1": {"acquired": 2 * (10 - n)}},
            },
        )


def test_the_overview_draws_every_chart_from_history_at_once(operator_client, history):
    html = operator_client.get("/").content.decode()

    assert html.count('<svg class="chart__svg"') == 4
    for title in (
        "Claim attempt outcomes per minute",
        "Claims by derived state",
        "Held claims per live engine",
        "Pass durations (slowest live engine)",
    ):
        assert f">{title}</title>" in html
    assert "acquired: now 6/min, peak 6/min" in html
    assert 'data-rate="acquired">6.0/min</div>' in html
    assert "collecting" not in html


def test_the_live_fragment_carries_the_charts(operator_client, history):
    html = operator_client.get("/", **htmx()).content.decode()

    assert 'id="overview-history"' in html
    assert "e-1: now 4, peak 4" in html


def test_without_history_the_charts_say_so(operator_client):
    html = operator_client.get("/").content.decode()

    assert html.count("No history in this window yet.</desc>") == 4
    assert 'data-rate="acquired">no history yet</div>' in html


def test_the_window_is_in_the_url(operator_client, history):
    html = operator_client.get("/?history=24h").content.decode()

    assert '<a href="?history=24h" aria-current="true">24h</a>' in html
    assert "live: now 4, peak 4" in html  # one point per 12 minutes over a day


def test_an_unknown_window_is_a_400_naming_the_choices(operator_client):
    response = operator_client.get("/?history=7d")

    assert response.status_code == 400
    assert "history must be one of 1h, 6h, 24h" in response.content.decode()


def test_the_engine_page_draws_its_own_outcomes_held_claims_and_passes(operator_client, history):
    make_engine("e-1")

    html = operator_client.get("/engines/e-1/").content.decode()

    assert html.count('<svg class="chart__svg"') == 3
    assert "acquired: now 2/min, peak 2/min" in html
    assert "e-1: now 4, peak 4" in html
    assert "renew: now 12 ms, peak 12 ms; reclaim: now 30 ms" in html
    assert operator_client.get("/engines/e-1/?history=2h").status_code == 400


@pytest.mark.parametrize("rows", [3, 300])
def test_the_engine_page_reads_the_history_in_one_more_query(
    operator_client, rows, django_assert_max_num_queries
):
    now = now_ms()
    make_engine("e-1")
    for n in range(rows):
        FleetSnapshotHistory.objects.create(
            taken_at_ms=now - n * 10_000, data={"held": {"e-1": n}, "passes": {}}
        )

    with django_assert_max_num_queries(12):
        operator_client.get("/engines/e-1/", **htmx())
