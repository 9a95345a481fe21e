"""/metrics for the fleet: weft's three claim families summed over engines, plus weftboard_*.

Engines persist their counters (ClaimCounter) and pass histograms (Engine.pass_summary);
the web process reads them at scrape time. Counter rows outlive their engines,
so fleet counters never go down. No workflow id is ever a label.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from claims.engine.histogram import BUCKETS_S
from claims.protocol.constants import OUTCOMES

PASS_NAMES = ("renew", "reclaim", "wake")
CANDIDATE_SOURCES = ("stale_holders", "unheld_indexed", "authoritative_scan", "pending_redrives")


def _histogram(name: str, documentation: str, summaries: list[dict[str, Any]]) -> Metric:
    family = HistogramMetricFamily(name, documentation, labels=["pass"])
    for pass_name in PASS_NAMES:
        counts = [0] * (len(BUCKETS_S) + 1)
        total = 0.0
        for summary in summaries:
            data = summary.get("histograms", {}).get(pass_name)
            if not data or len(data.get("counts", [])) != len(counts):
                continue
            counts = [a + b for a, b in zip(counts, data["counts"], strict=True)]
            total += float(data.get("sum", 0.0))
        cumulative, buckets = 0, []
        for bound, count in zip([*map(str, BUCKETS_S), "+Inf"], counts, strict=True):
            cumulative += count
            buckets.append((bound, cumulative))
        family.add_metric([pass_name], buckets, total)
    return family


class FleetCollector(Collector):
    def describe(self) -> Iterator[Metric]:
        # Without describe(), registering would call collect() and query the
        # database while Django is still starting.
        return iter(())

    def collect(self) -> Iterator[Metric]:
        from claims import selectors

        fleet = selectors.fleet_metrics()
        attempts = CounterMetricFamily(
            "weft_workflow_claim_attempts",
            "Total per-workflow ownership claim attempts, by outcome",
            labels=["outcome"],
        )
        for outcome in OUTCOMES:
            attempts.add_metric([outcome], fleet.counters.get(outcome, 0))
        yield attempts
        yield GaugeMetricFamily(
            "weft_workflow_claims_active",
            "Workflows this engine currently holds a claim for",
            value=fleet.active_claims,
        )
        yield CounterMetricFamily(
            "weft_workflow_claim_renewal_failures",
            "Total per-workflow claim renewal failures",
            value=fleet.counters.get("renewal_failures", 0),
        )
        yield CounterMetricFamily(
            "weftboard_broker_messages_rejected",
            "Broker messages an engine could not decode, logged with their queue and set aside",
            value=fleet.counters.get("broker_rejected", 0),
        )
        engines = GaugeMetricFamily("weftboard_engines", "Engines by status", labels=["status"])
        for status, count in fleet.engines_by_status.items():
            engines.add_metric([status], count)
        yield engines
        yield GaugeMetricFamily(
            "weftboard_pending_redrives",
            "Claimed workflows whose drive failed and awaits a retry",
            value=fleet.pending_redrives,
        )
        yield CounterMetricFamily(
            "weftboard_reclaim_cursor_wraps",
            "Times the authoritative reclaim scan wrapped to the start of the workflow table",
            value=fleet.cursor_wraps,
        )
        yield CounterMetricFamily(
            "weftboard_reclaim_scanned_workflows",
            "Workflow rows read by the authoritative reclaim scan",
            value=fleet.cursor_scanned,
        )
        candidates = GaugeMetricFamily(
            "weftboard_reclaim_candidates",
            "Reclaim candidates found by the last pass of each live engine, by source",
            labels=["source"],
        )
        for source in CANDIDATE_SOURCES:
            candidates.add_metric([source], fleet.candidates_by_source.get(source, 0))
        yield candidates
        yield _histogram(
            "weftboard_pass_duration_seconds",
            "Duration of engine sub-passes",
            fleet.pass_summaries,
        )
        backfill = GaugeMetricFamily(
            "weftboard_backfill_progress_ratio",
            "Progress of the active visibility backfill (0 to 1); absent when none runs",
        )
        if fleet.backfill_progress is not None:
            backfill.add_metric([], fleet.backfill_progress)
        yield backfill


_registered = False


def register_fleet_collector() -> None:
    """Register once per process (Django may call ready() more than once in tests)."""
    global _registered
    if _registered:
        return
    from prometheus_client import REGISTRY

    REGISTRY.register(FleetCollector())
    _registered = True
