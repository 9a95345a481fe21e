"""The history selector: chart series from the kept snapshots, in one query."""

from __future__ import annotations

import pytest

from claims.conf import MINUTE_MS
from claims.models import FleetSnapshotHistory
from claims.selectors.fleet.history import (
    OTHER_ENGINES,
    TOP_ENGINES,
    engine_history,
    fleet_history,
)

pytestmark = pytest.mark.django_db

NOW = 1_800_000_000_000
HOUR_MS = 3_600_000


def row(at: int, *, acquired: int = 0, live: int = 0, held=None, passes=None) -> None:
    FleetSnapshotHistory.objects.create(
        taken_at_ms=at,
        data={
            "counters": {"acquired": acquired, "takeover": 0},
            "by_state": {"live": live, "expired": 0},
            "held": held or {},
            "passes": passes or {},
            "slowest": slowest(passes or {}),
        },
    )


def slowest(passes):
    """As beat writes it: each pass's slowest duration over the live engines."""
    found: dict[str, float] = {}
    for runs in passes.values():
        for name, ms in runs.items():
            found[name] = max(ms, found.get(name, 0.0))
    return found


def series(found, name):
    (match,) = [s for s in found if s.name == name]
    return match.points


def test_outcomes_are_per_minute_rates_from_counter_deltas():
    """Two minutes apart, 30 more acquisitions: 15 a minute, placed at the later row."""
    row(NOW - 3 * MINUTE_MS, acquired=100)
    row(NOW - MINUTE_MS, acquired=130)
    row(NOW, acquired=120)  # a counter that went down counts as nothing

    history = fleet_history(now_ms=NOW)

    assert series(history.outcomes, "acquired") == ((NOW - MINUTE_MS, 15.0), (NOW, 0.0))
    assert history.latest_rates["acquired"] == 0.0
    assert history.latest_rates["renewal_failures"] is None  # not in these rows


def test_one_point_per_minute_the_last_row_of_each():
    """Five-second rows are drawn one a minute, so an hour is at most 61 points."""
    for n in range(24):
        row(NOW - 2 * MINUTE_MS + n * 5_000, live=n)

    points = series(fleet_history(now_ms=NOW).claims_by_state, "live")

    assert [value for _, value in points] == [11.0, 23.0]


def test_rows_outside_the_window_are_not_shown_but_start_the_first_rate():
    row(NOW - HOUR_MS - 30_000, acquired=0, live=9)
    row(NOW - HOUR_MS + 30_000, acquired=60, live=1)

    history = fleet_history(now_ms=NOW)

    assert series(history.claims_by_state, "live") == ((NOW - HOUR_MS + 30_000, 1.0),)
    assert series(history.outcomes, "acquired") == ((NOW - HOUR_MS + 30_000, 60.0),)


def test_held_claims_draw_the_busiest_engines_and_sum_the_rest():
    held = {f"e-{n}": n for n in range(TOP_ENGINES + 3)}
    row(NOW, held=held)

    found = fleet_history(now_ms=NOW).held_by_engine

    names = [s.name for s in found]
    assert names[:TOP_ENGINES] == [f"e-{n}" for n in range(TOP_ENGINES + 2, 2, -1)]
    assert series(found, OTHER_ENGINES) == ((NOW, 3.0),)  # e-0 + e-1 + e-2


def test_pass_durations_are_the_slowest_live_engine_and_one_engine_its_own():
    passes = {"e-1": {"renew": 12.0, "reclaim": 40.0}, "e-2": {"renew": 30.0}}
    row(NOW - MINUTE_MS, held={"e-1": 2, "e-2": 5}, passes=passes)

    fleet = fleet_history(now_ms=NOW)
    mine = engine_history("e-1", now_ms=NOW)

    assert series(fleet.pass_durations, "renew") == ((NOW - MINUTE_MS, 30.0),)
    assert series(fleet.pass_durations, "wake") == ()
    assert series(mine.pass_durations, "renew") == ((NOW - MINUTE_MS, 12.0),)
    assert series(mine.held, "e-1") == ((NOW - MINUTE_MS, 2.0),)


def test_a_day_window_is_bucketed_to_about_a_hundred_points():
    for n in range(24 * 60):
        row(NOW - n * MINUTE_MS, acquired=10 * (24 * 60 - n))

    history = fleet_history(now_ms=NOW, window="24h")

    points = series(history.outcomes, "acquired")
    assert 100 <= len(points) <= 121
    assert all(value == pytest.approx(10.0) for _, value in points)


def test_no_history_gives_empty_series():
    history = fleet_history(now_ms=NOW)

    assert all(not s.points for s in history.outcomes)
    assert history.claims_by_state == []
    assert history.held_by_engine == []


@pytest.mark.parametrize("rows", [3, 300])
def test_the_history_is_one_query_whatever_its_length(rows, django_assert_num_queries):
    for n in range(rows):
        row(NOW - n * 10_000, acquired=n, held={"e-1": n, "e-2": 1})

    with django_assert_num_queries(1):
        fleet_history(now_ms=NOW, window="1h")
    with django_assert_num_queries(1):
        engine_history("e-1", now_ms=NOW, window="24h")
