"""One engine's attempt outcomes per minute: beat keeps each live engine's charted counters
in the history row, and the engine page draws that engine's rates from them alone."""

from __future__ import annotations

from typing import Any

import pytest

from claims.conf import MINUTE_MS
from claims.models import ClaimCounter, EngineStatus, FleetSnapshotHistory
from claims.selectors.fleet.history import (
    CHARTED_COUNTERS,
    engine_history,
    history_row,
)
from tests.factories import make_engine

pytestmark = pytest.mark.django_db

NOW = 1_800_000_000_000


def row(at: int, engine_counters: dict[str, dict[str, int]]) -> None:
    FleetSnapshotHistory.objects.create(
        taken_at_ms=at,
        data={"counters": {}, "held": {}, "passes": {}, "engine_counters": engine_counters},
    )


def rates(found: Any, name: str) -> tuple[tuple[int, float], ...]:
    return next(series.points for series in found.outcomes if series.name == name)


def test_the_history_row_keeps_each_live_engines_charted_counters() -> None:
    make_engine("e-live")
    make_engine("e-quiet")
    make_engine("e-gone", status=EngineStatus.DEAD)
    for engine_id, name, value in [
        ("e-live", "acquired", 12),
        ("e-live", "takeover", 3),
        ("e-live", "broker_rejected", 9),  # not charted
        ("e-gone", "acquired", 50),
    ]:
        ClaimCounter.objects.create(engine_id=engine_id, name=name, value=value)

    kept = history_row(by_state={}, by_holder={"e-live": 2})["engine_counters"]

    assert kept == {"e-live": {"acquired": 12, "takeover": 3}, "e-quiet": {}}
    assert "broker_rejected" not in CHARTED_COUNTERS


def test_an_engines_rates_come_from_its_own_counters_from_its_first_row() -> None:
    row(NOW - 3 * MINUTE_MS, {"e-2": {"acquired": 100}})  # before e-1 ran
    row(NOW - 2 * MINUTE_MS, {"e-1": {}, "e-2": {"acquired": 500}})
    row(NOW - MINUTE_MS, {"e-1": {"acquired": 30, "takeover": 4}, "e-2": {"acquired": 900}})
    row(NOW, {"e-1": {"acquired": 90, "takeover": 4}, "e-2": {"acquired": 1_000}})

    mine = engine_history("e-1", now_ms=NOW)

    assert rates(mine, "acquired") == ((NOW - MINUTE_MS, 30.0), (NOW, 60.0))
    assert rates(mine, "takeover") == ((NOW - MINUTE_MS, 4.0), (NOW, 0.0))
    assert [chart.key for chart in mine.charts] == ["outcomes", "held", "passes"]


def test_an_engine_with_no_counters_kept_has_empty_rates() -> None:
    row(NOW - MINUTE_MS, {"e-2": {"acquired": 1}})
    row(NOW, {"e-2": {"acquired": 2}})

    assert all(not series.points for series in engine_history("e-1", now_ms=NOW).outcomes)
