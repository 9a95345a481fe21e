"""/metrics for the fleet: weft's three claim families summed over engines, plus weftboard_*.

Engines persist their counters (ClaimCounter) and pass histograms (Engine.pass_summary);
the web process reads them at scrape time. Counter rows outlive their engines,
so fleet counters never go down. No workflow id is ever a label.

Every series here is read from the shared database, so every web replica serves the
same value: each carries ``scope="fleet"``, and operators aggregate across replicas with
``max``, never ``sum`` (docs/design.md §6). HELP texts say what the fleet series means;
weft's own per-engine texts stay verbatim in ``claims.protocol.metrics``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from claims.protocol.constants import OUTCOMES
from claims.protocol.pass_histogram import BUCKETS_S, summed_histograms

if TYPE_CHECKING:
    from claims.selectors import FleetMetrics

PASS_NAMES = ("renew", "reclaim", "wake")
CANDIDATE_SOURCES = ("stale_holders", "unheld_indexed", "authoritative_scan", "pending_redrives")

F = TypeVar("F", CounterMetricFamily, GaugeMetricFamily)

# The label every series of this collector carries: the same on every web replica.
SCOPE_LABEL, FLEET_SCOPE = "scope", "fleet"


def with_fleet_scope(family: Metric) -> Metric:
    """The family with ``scope="fleet"`` added to every sample."""
    family.samples = [
        sample._replace(labels={**sample.labels, SCOPE_LABEL: FLEET_SCOPE})
        for sample in family.samples
    ]
    return family


def _by_label(family: F, labels: Iterable[str], values: Mapping[str, float]) -> F:
    """The family with one sample per label, every label present: 0 where nothing counted."""
    for label in labels:
        family.add_metric([label], values.get(label, 0))
    return family


def _histogram(name: str, documentation: str, summaries: list[dict[str, Any]]) -> Metric:
    family = HistogramMetricFamily(name, documentation, labels=["pass"])
    summed = summed_histograms(summaries)
    for pass_name in PASS_NAMES:
        data = summed.get(pass_name, {})
        counts = data.get("counts", [0] * (len(BUCKETS_S) + 1))
        total = float(data.get("sum", 0.0))
        cumulative, buckets = 0, []
        for bound, count in zip([*map(str, BUCKETS_S), "+Inf"], counts, strict=True):
            cumulative += count
            buckets.append((bound, cumulative))
        family.add_metric([pass_name], buckets, total)
    return family


def _claim_families(fleet: FleetMetrics) -> Iterator[Metric]:
    """weft's three claim families, summed over the fleet."""
    yield _by_label(
        CounterMetricFamily(
            "weft_workflow_claim_attempts",
            "Claim attempts by outcome, summed over every engine that ever ran",
            labels=["outcome"],
        ),
        OUTCOMES,
        fleet.counters,
    )
    yield GaugeMetricFamily(
        "weft_workflow_claims_active",
        "Claims held by the active and disposing engines, summed over those engines",
        value=fleet.active_claims,
    )
    yield CounterMetricFamily(
        "weft_workflow_claim_renewal_failures",
        "Claim renewals lost or raised, summed over every engine that ever ran",
        value=fleet.counters.get("renewal_failures", 0),
    )


def _engine_families(fleet: FleetMetrics) -> Iterator[Metric]:
    """Rejected broker messages, engines by status and pending re-drives."""
    yield CounterMetricFamily(
        "weftboard_broker_messages_rejected",
        "Broker messages an engine could not decode and set aside, summed over every engine "
        "that ever ran",
        value=fleet.counters.get("broker_rejected", 0),
    )
    engines = GaugeMetricFamily(
        "weftboard_engines", "Engine rows by status, as recorded in the database", labels=["status"]
    )
    for status, count in fleet.engines_by_status.items():
        engines.add_metric([status], count)
    yield engines
    yield GaugeMetricFamily(
        "weftboard_pending_redrives",
        "Claimed workflows whose drive failed and awaits a retry, over all engines",
        value=fleet.pending_redrives,
    )


SESSION_RENEWAL_OUTCOMES = ("renewed", "lost", "failed")


def _session_families(fleet: FleetMetrics) -> Iterator[Metric]:
    """The engine-lease mode's session lease: its renewals, and the expired sessions closed
    for takeover. Zero in the workflow-lease mode, where no engine holds a session."""
    yield _by_label(
        CounterMetricFamily(
            "weftboard_session_renewals",
            "Engine-session renewals by outcome (renewed; lost: the session had been closed "
            "for takeover; failed: the statement raised), summed over every engine that ever "
            "ran",
            labels=["outcome"],
        ),
        SESSION_RENEWAL_OUTCOMES,
        {
            outcome: fleet.counters.get(f"session_{outcome}", 0)
            for outcome in SESSION_RENEWAL_OUTCOMES
        },
    )
    yield CounterMetricFamily(
        "weftboard_session_expiries",
        "Expired engine sessions closed to take their claims over (each closed once), summed "
        "over every engine that ever ran",
        value=fleet.counters.get("session_closed_expired", 0),
    )


def _reclaim_families(fleet: FleetMetrics) -> Iterator[Metric]:
    """The authoritative scan's progress and the last passes' candidates by source."""
    yield CounterMetricFamily(
        "weftboard_reclaim_cursor_wraps",
        "Times the authoritative reclaim scan wrapped to the start of the workflow table, "
        "summed over every reclaim cursor",
        value=fleet.cursor_wraps,
    )
    yield CounterMetricFamily(
        "weftboard_reclaim_scanned_workflows",
        "Workflow rows read by the authoritative reclaim scan, summed over every reclaim cursor",
        value=fleet.cursor_scanned,
    )
    yield _by_label(
        GaugeMetricFamily(
            "weftboard_reclaim_candidates",
            "Reclaim candidates found by the last reclaim pass of each active or disposing "
            "engine, summed by source",
            labels=["source"],
        ),
        CANDIDATE_SOURCES,
        fleet.candidates_by_source,
    )


def _backfill_progress(fleet: FleetMetrics) -> Metric:
    backfill = GaugeMetricFamily(
        "weftboard_backfill_progress_ratio",
        "Progress of the running visibility backfill (0 to 1); absent when none runs",
    )
    if fleet.backfill_progress is not None:
        backfill.add_metric([], fleet.backfill_progress)
    return backfill


def _live_engine_families(fleet: FleetMetrics) -> Iterator[Metric]:
    """Per-engine series, only for live engines that are not silent (a bounded label set)."""
    held = GaugeMetricFamily(
        "weftboard_engine_held_claims",
        "Claims held by one live engine (active or disposing, heard from within TTL plus "
        "two renew intervals); engines that stop, die or fall silent have no series",
        labels=["engine"],
    )
    for engine_id, count in sorted(fleet.held_by_live_engine.items()):
        held.add_metric([engine_id], count)
    yield held


def _engine_floor_families(fleet: FleetMetrics) -> Iterator[Metric]:
    """Live engines against WEFTBOARD_MIN_ENGINES, for an alert on an empty or thin fleet."""
    from claims.conf import min_engines

    minimum = min_engines()
    yield GaugeMetricFamily(
        "weftboard_engines_live",
        "Active engines heard from within TTL plus two renew intervals (silent ones excluded)",
        value=fleet.engines_healthy,
    )
    yield GaugeMetricFamily(
        "weftboard_engines_minimum",
        "WEFTBOARD_MIN_ENGINES: the fewest live engines the fleet should run",
        value=minimum,
    )
    yield GaugeMetricFamily(
        "weftboard_engines_below_minimum",
        "1 while fewer live engines run than WEFTBOARD_MIN_ENGINES, else 0",
        value=int(fleet.engines_healthy < minimum),
    )


def _bulk_families(fleet: FleetMetrics) -> Iterator[Metric]:
    """Bulk job items by action and outcome, every pair present; jobs by status."""
    from claims.models import BulkAction, BulkJobStatus

    items = CounterMetricFamily(
        "weftboard_bulk_items",
        "Items of bulk jobs acted on, by action and outcome (done: moved on from its frozen"
        " epoch; moved: its claim had moved since the freeze; refused: by the action's rules)",
        labels=["action", "outcome"],
    )
    for action in BulkAction.values:
        for outcome in ("done", "moved", "refused"):
            items.add_metric([action, outcome], fleet.bulk_items.get((action, outcome), 0))
    yield items
    yield _by_label(
        GaugeMetricFamily("weftboard_bulk_jobs", "Bulk jobs by status", labels=["status"]),
        BulkJobStatus.values,
        fleet.bulk_jobs_by_status,
    )


def _fleet_families(fleet: FleetMetrics) -> Iterator[Metric]:
    yield from _claim_families(fleet)
    yield from _engine_families(fleet)
    yield from _session_families(fleet)
    yield from _live_engine_families(fleet)
    yield from _engine_floor_families(fleet)
    yield from _reclaim_families(fleet)
    yield _histogram(
        "weftboard_pass_duration_seconds",
        "Duration of engine sub-passes, buckets summed over every recorded engine",
        fleet.pass_summaries,
    )
    yield _backfill_progress(fleet)
    yield from _bulk_families(fleet)


class FleetCollector(Collector):
    def describe(self) -> Iterator[Metric]:
        # Without describe(), registering would call collect() and query the
        # database while Django is still starting.
        return iter(())

    def collect(self) -> Iterator[Metric]:
        from claims import selectors

        fleet = selectors.fleet_metrics()
        for family in _fleet_families(fleet):
            yield with_fleet_scope(family)


_registered = False


def register_fleet_collector() -> None:
    """Register once per process (Django may call ready() more than once in tests)."""
    global _registered
    if _registered:
        return
    from prometheus_client import REGISTRY

    REGISTRY.register(FleetCollector())
    _registered = True
