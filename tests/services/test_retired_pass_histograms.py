"""Pruning old engines keeps their pass histograms in the fleet's: the buckets, count and
sum /metrics shows for weftboard_pass_duration_seconds never go down, and a prune that
runs twice (or at the same time as another) adds nothing twice."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.db import connection
from prometheus_client.parser import text_string_to_metric_families

from claims.conf import DAY_MS
from claims.fleet_clock import fleet_clock
from claims.models import Engine, EngineStatus, RetiredPassHistograms
from claims.protocol.pass_histogram import BUCKETS_S, summed_histograms
from claims.services.engines import engines_prune_history

KEEP_MS = 7 * DAY_MS
FAST = [1] + [0] * len(BUCKETS_S)  # one pass under 5 ms
SLOW = [0] * len(BUCKETS_S) + [1]  # one pass over 10 s


def engine(engine_id: str, status: str, heard_days_ago: float, counts: list[int]) -> None:
    Engine.objects.create(
        engine_id=engine_id,
        hostname="h",
        pid=1,
        started_at_ms=0,
        heartbeat_at_ms=fleet_clock()() - int(heard_days_ago * DAY_MS),
        status=status,
        pass_summary={"histograms": {"renew": {"counts": counts, "sum": 12.5}}},
    )


def renew_histogram(client: Any) -> dict[str, float]:
    """weftboard_pass_duration_seconds for the renew pass: count, sum and the 5 ms bucket."""
    text = client.get("/metrics").content.decode()
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.labels.get("pass") != "renew":
                continue
            if sample.name == "weftboard_pass_duration_seconds_bucket":
                if sample.labels["le"] == "0.005":
                    found["fast"] = sample.value
            elif sample.name.startswith("weftboard_pass_duration_seconds_"):
                found[sample.name.rsplit("_", 1)[1]] = sample.value
    return found


@pytest.mark.django_db
def test_pruned_engines_still_count_in_the_pass_histogram(client: Any) -> None:
    engine("e-old-1", EngineStatus.DEAD, 8, FAST)
    engine("e-old-2", EngineStatus.STOPPED, 9, SLOW)
    engine("e-live", EngineStatus.ACTIVE, 0, FAST)
    before = renew_histogram(client)
    assert before == {"count": 3, "sum": 37.5, "fast": 2}

    assert engines_prune_history(now_ms=fleet_clock()(), keep_ms=KEEP_MS) == 2
    assert Engine.objects.count() == 1
    assert renew_histogram(client) == before

    # Pruning again adds nothing; a later prune adds only what it removes.
    assert engines_prune_history(now_ms=fleet_clock()(), keep_ms=KEEP_MS) == 0
    engine("e-old-3", EngineStatus.DEAD, 10, FAST)
    assert engines_prune_history(now_ms=fleet_clock()(), keep_ms=KEEP_MS) == 1
    assert renew_histogram(client) == {"count": 4, "sum": 50.0, "fast": 3}
    assert RetiredPassHistograms.objects.get().engines == 3


def test_histograms_of_another_bucket_layout_are_left_out() -> None:
    odd = {"histograms": {"renew": {"counts": [1, 2], "sum": 1.0}}}
    good = {"histograms": {"renew": {"counts": FAST, "sum": 0.25}}}

    assert summed_histograms([odd, good, {}]) == {"renew": {"counts": FAST, "sum": 0.25}}


@pytest.mark.django_db(transaction=True)
def test_two_prunes_at_once_add_each_engine_once() -> None:
    for n in range(20):
        engine(f"e-old-{n}", EngineStatus.DEAD, 8, FAST)
    now = fleet_clock()()
    start = threading.Barrier(2)

    def prune(_: int) -> int:
        start.wait()
        try:
            return engines_prune_history(now_ms=now, keep_ms=KEEP_MS)
        finally:
            connection.close()

    with ThreadPoolExecutor(2) as pool:
        pruned = sorted(pool.map(prune, range(2)))

    assert pruned == [0, 20]
    retired = RetiredPassHistograms.objects.get()
    assert retired.engines == 20
    assert retired.summary["histograms"]["renew"]["counts"][0] == 20
