"""The fleet snapshot history as chart series: one query for the window shown.

Beat writes one row per renew interval and thins rows older than an hour to one per
minute (claims.services.fleet_history). The charts draw one point per bucket of
``bucket_ms`` (the last row taken in it), so a window of an hour and one of a day both
come out at about a hundred points, and the overview stays within its page budget.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from django.db.models import F, Max
from django.db.models.fields.json import KeyTransform

from claims.conf import MINUTE_MS
from claims.models import ClaimCounter, CounterName, Engine, FleetSnapshotHistory
from claims.protocol.constants import OUTCOMES
from claims.protocol.states import ClaimState
from claims.selectors.engines.liveness import LIVE_ENGINE_STATUSES
from claims.selectors.engines.passes import PASS_NAMES, pass_part

from .totals import counter_totals

# The windows an operator can pick (?history=), the first the default.
HISTORY_WINDOWS_MS = {"1h": 3_600_000, "6h": 6 * 3_600_000, "24h": 24 * 3_600_000}
DEFAULT_WINDOW = "1h"
# Points per chart at most; a bucket is never shorter than a minute (rates are per minute).
MAX_POINTS = 120
# Outcomes charted as per-minute rates: the attempt outcomes and failed renewals.
CHARTED_COUNTERS = (*OUTCOMES, CounterName.RENEWAL_FAILURES.value)
# Engines drawn one line each on the overview; the rest are summed into one line.
TOP_ENGINES = 5
OTHER_ENGINES = "other engines"

Point = tuple[int, float]


@dataclass(frozen=True)
class Series:
    """One line of a chart: a name and its (taken_at_ms, value) points in time order."""

    name: str
    points: tuple[Point, ...]

    @property
    def latest(self) -> float | None:
        return self.points[-1][1] if self.points else None


@dataclass(frozen=True)
class Chart:
    """One chart as a page draws it (claims.templatetags.charts.line_chart)."""

    key: str  # part of the element ids
    title: str
    unit: str
    series: list[Series]


@dataclass(frozen=True)
class FleetHistory:
    start_ms: int
    end_ms: int
    window: str
    outcomes: list[Series]  # attempts per minute, from counter deltas between buckets
    claims_by_state: list[Series]
    held_by_engine: list[Series]
    pass_durations: list[Series]  # the slowest live engine's last run of each pass, ms

    @property
    def latest_rates(self) -> dict[str, float | None]:
        return {series.name: series.latest for series in self.outcomes}

    @property
    def charts(self) -> list[Chart]:
        return [
            Chart("outcomes", "Claim attempt outcomes per minute", "/min", self.outcomes),
            Chart("states", "Claims by derived state", "", self.claims_by_state),
            Chart("held", "Held claims per live engine", "", self.held_by_engine),
            Chart("passes", "Pass durations (slowest live engine)", " ms", self.pass_durations),
        ]


@dataclass(frozen=True)
class EngineHistory:
    start_ms: int
    end_ms: int
    window: str
    outcomes: list[Series]  # this engine's attempts per minute
    held: list[Series]
    pass_durations: list[Series]

    @property
    def charts(self) -> list[Chart]:
        return [
            Chart("outcomes", "Claim attempt outcomes per minute", "/min", self.outcomes),
            Chart("held", "Held claims", "", self.held),
            Chart("passes", "Pass durations", " ms", self.pass_durations),
        ]


def history_row(
    *, by_state: Mapping[ClaimState, int], by_holder: Mapping[str, int]
) -> dict[str, Any]:
    """What one history row keeps, read now (three queries): the fleet's counter totals,
    claims by derived state, per live engine its held claims, pass durations and charted
    counters, and each pass's slowest duration (what the overview draws, so it need not
    read every engine's)."""
    counters = counter_totals()
    live = Engine.objects.filter(status__in=LIVE_ENGINE_STATUSES).values_list(
        "engine_id", "pass_summary"
    )
    held, passes = {}, {}
    for engine_id, summary in live:
        held[engine_id] = int(by_holder.get(engine_id, 0))
        durations = {name: pass_part(summary, name).get("duration_ms") for name in PASS_NAMES}
        passes[engine_id] = {k: float(v) for k, v in durations.items() if v is not None}
    engine_counters: dict[str, dict[str, int]] = {engine_id: {} for engine_id in held}
    mine = ClaimCounter.objects.filter(engine_id__in=list(held), name__in=CHARTED_COUNTERS)
    for engine_id, name, value in mine.values_list("engine_id", "name", "value"):
        engine_counters[engine_id][name] = int(value)
    slowest = {
        name: max(runs[name] for runs in passes.values() if name in runs)
        for name in PASS_NAMES
        if any(name in runs for runs in passes.values())
    }
    return {
        "counters": counters,
        "by_state": dict(by_state),
        "held": held,
        "passes": passes,
        "slowest": slowest,
        "engine_counters": engine_counters,
    }


def _window(
    now_ms: int, window: str, parts: Mapping[str, KeyTransform]
) -> tuple[int, list[tuple[int, dict[str, Any]]]]:
    """The window's start, and ``parts`` of the last row of each of its buckets. One
    query: the database picks the rows and the parts of ``data`` a chart needs, so about a
    hundred small values are decoded whatever the window and the fleet's size."""
    window_ms = HISTORY_WINDOWS_MS[window]
    bucket_ms = max(MINUTE_MS, window_ms // MAX_POINTS)
    start_ms = now_ms - window_ms
    # One bucket before the window, so the first bucket's rate has a row to start from;
    # buckets count from there, so no bucket number is negative (SQL truncates, not floors).
    origin_ms = start_ms - bucket_ms
    rows = FleetSnapshotHistory.objects.filter(taken_at_ms__gte=origin_ms, taken_at_ms__lte=now_ms)
    last_of_each = (
        rows.annotate(bucket=(F("taken_at_ms") - origin_ms) / bucket_ms)
        .values("bucket")
        .annotate(last=Max("taken_at_ms"))
        .values("last")
    )
    picked = (
        rows.filter(taken_at_ms__in=last_of_each)
        .annotate(**{f"part_{name}": part for name, part in parts.items()})
        .order_by("taken_at_ms")
        .values_list("taken_at_ms", *(f"part_{name}" for name in parts))
    )
    return start_ms, [(found[0], dict(zip(parts, found[1:], strict=True))) for found in picked]


def _part(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _values(rows: Sequence[tuple[int, Mapping[str, Any]]], key: str, name: str) -> Series:
    """The value ``data[key][name]`` at each row that has it."""
    points = []
    for taken_at_ms, data in rows:
        value = _part(data, key).get(name)
        if isinstance(value, int | float):
            points.append((taken_at_ms, float(value)))
    return Series(name, tuple(points))


def _rates(rows: Sequence[tuple[int, Mapping[str, Any]]], start_ms: int, name: str) -> Series:
    """Per minute between consecutive rows; a counter never goes down, so a drop (rows
    written by another fleet, or counters pruned) counts as nothing rather than negative."""
    points = []
    for (before_ms, before), (after_ms, after) in pairwise(rows):
        a, b = _part(before, "counters").get(name), _part(after, "counters").get(name)
        if after_ms < start_ms or not isinstance(a, int) or not isinstance(b, int):
            continue
        points.append((after_ms, max(0, b - a) * MINUTE_MS / (after_ms - before_ms)))
    return Series(name, tuple(points))


def _held(rows: Sequence[tuple[int, Mapping[str, Any]]]) -> list[Series]:
    """The engines holding most at the newest row one line each, the others summed."""
    latest = _part(rows[-1][1], "held") if rows else {}
    top = sorted(latest, key=lambda e: (-int(latest[e] or 0), e))[:TOP_ENGINES]
    series = [_values(rows, "held", engine_id) for engine_id in top]
    shown = set(top)
    others = []
    for taken_at_ms, data in rows:
        held = _part(data, "held")
        if len(held.keys() - shown):
            rest = sum(v for e, v in held.items() if e not in shown and isinstance(v, int))
            others.append((taken_at_ms, float(rest)))
    if others:
        series.append(Series(OTHER_ENGINES, tuple(others)))
    return series


def fleet_history(*, now_ms: int, window: str = DEFAULT_WINDOW) -> FleetHistory:
    """The overview's charts over ``window`` ending at ``now_ms``; one query."""
    parts = {key: KeyTransform(key, "data") for key in ("counters", "by_state", "held", "slowest")}
    start_ms, rows = _window(now_ms, window, parts)
    shown = [row for row in rows if row[0] >= start_ms]
    states = sorted({name for _, data in shown for name in _part(data, "by_state")})
    return FleetHistory(
        start_ms=start_ms,
        end_ms=now_ms,
        window=window,
        outcomes=[_rates(rows, start_ms, name) for name in CHARTED_COUNTERS],
        claims_by_state=[_values(shown, "by_state", name) for name in states],
        held_by_engine=_held(shown),
        pass_durations=[_values(shown, "slowest", name) for name in PASS_NAMES],
    )


def engine_history(engine_id: str, *, now_ms: int, window: str = DEFAULT_WINDOW) -> EngineHistory:
    """One engine's attempt outcomes, held claims and pass durations over ``window``; one
    query. Its outcomes start at the first row taken while it was live (a row before
    that has no counters of it, so no rate is drawn across its start)."""
    keys = {"held": "held", "passes": "passes", "counters": "engine_counters"}
    parts = {part: KeyTransform(engine_id, KeyTransform(key, "data")) for part, key in keys.items()}
    start_ms, rows = _window(now_ms, window, parts)
    shown = [
        (t, {"held": {engine_id: data["held"]}, "passes": data["passes"]})
        for t, data in rows
        if t >= start_ms
    ]
    # A live engine's charted counters that are still 0 have no row yet: read as 0.
    counted = [
        (t, {"counters": dict.fromkeys(CHARTED_COUNTERS, 0) | data["counters"]})
        for t, data in rows
        if isinstance(data["counters"], dict)
    ]
    return EngineHistory(
        start_ms=start_ms,
        end_ms=now_ms,
        window=window,
        outcomes=[_rates(counted, start_ms, name) for name in CHARTED_COUNTERS],
        held=[_values(shown, "held", engine_id)],
        pass_durations=[_values(shown, "passes", name) for name in PASS_NAMES],
    )
