"""Fleet-wide totals: workflows per status, claim rows with and without a holder, and
everything /metrics shows. Each is a fixed number of queries whatever the fleet's size."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.db.models import Count, Q, Sum

from claims.selectors.engines.liveness import LIVE_ENGINE_STATUSES, silent_before_ms

if TYPE_CHECKING:
    from claims.protocol.timing import ClaimTiming


@dataclass(frozen=True, slots=True)
class ClaimHolderCounts:
    held: int
    ownerless: int


def workflow_status_counts() -> dict[str, int]:
    """Workflows per status, one query, statuses in name order; absent statuses are omitted."""
    from claims.models import Workflow

    rows = Workflow.objects.values("status").annotate(count=Count("pk")).order_by("status")
    return {row["status"]: row["count"] for row in rows}


def claim_holder_counts() -> ClaimHolderCounts:
    """Claim rows with and without a holder, one query; expiry is not judged here."""
    from claims.models import WorkflowClaim

    totals = WorkflowClaim.objects.aggregate(
        held=Count("pk", filter=Q(holder_engine_id__isnull=False)),
        ownerless=Count("pk", filter=Q(holder_engine_id__isnull=True)),
    )
    return ClaimHolderCounts(held=totals["held"], ownerless=totals["ownerless"])


@dataclass(frozen=True)
class FleetMetrics:
    counters: dict[str, int]
    active_claims: int
    engines_by_status: dict[str, int]
    pending_redrives: int
    cursor_wraps: int
    cursor_scanned: int
    candidates_by_source: dict[str, int]
    pass_summaries: list[dict[str, Any]]
    backfill_progress: float | None
    # Held claims of each live engine that is not silent, by engine id: the only
    # per-engine series, so the label set is bounded by the live fleet (ids change
    # at every restart; a series per id ever seen would grow without bound).
    held_by_live_engine: dict[str, int] = field(default_factory=dict)
    # Active engines that are not silent: what WEFTBOARD_MIN_ENGINES is judged against.
    engines_healthy: int = 0
    # Bulk job items acted on, by (action, outcome), summed over every job ever run (jobs
    # are kept, so these never go down), and the jobs by status.
    bulk_items: dict[tuple[str, str], int] = field(default_factory=dict)
    bulk_jobs_by_status: dict[str, int] = field(default_factory=dict)


def counter_totals() -> dict[str, int]:
    """Each engine counter summed over every engine ever seen, zeros included; one query."""
    from claims.models import ClaimCounter, CounterName

    counters = dict.fromkeys(CounterName.values, 0)
    for row in ClaimCounter.objects.values("name").annotate(total=Sum("value")).order_by():
        counters[row["name"]] = int(row["total"] or 0)
    return counters


def fleet_metrics(*, now_ms: int | None = None, timing: ClaimTiming | None = None) -> FleetMetrics:
    """Everything /metrics shows, in seven queries whatever the fleet's size.

    ``now_ms`` and ``timing`` (the fleet clock's, when omitted) decide which live engines
    are silent and so get no per-engine series.
    """
    from claims.models import PendingRedrive, ReclaimCursor, RetiredPassHistograms

    if now_ms is None or timing is None:
        from claims.fleet_clock import fleet_now

        now_ms, timing = fleet_now()
    counters = counter_totals()
    engines = _engine_totals(silent_before_ms(now_ms, timing))
    cursor = ReclaimCursor.objects.aggregate(wraps=Sum("wraps"), scanned=Sum("scanned_total"))
    return FleetMetrics(
        counters=counters,
        active_claims=engines.active_claims,
        engines_by_status=engines.by_status,
        pending_redrives=PendingRedrive.objects.count(),
        cursor_wraps=int(cursor["wraps"] or 0),
        cursor_scanned=int(cursor["scanned"] or 0),
        candidates_by_source=engines.candidates,
        # The pruned engines' histograms still count: the series never goes down.
        pass_summaries=[
            *engines.summaries,
            *RetiredPassHistograms.objects.values_list("summary", flat=True),
        ],
        backfill_progress=_backfill_progress(),
        held_by_live_engine=engines.held_by_live_engine,
        engines_healthy=engines.healthy,
        **_bulk_totals(),
    )


def _bulk_totals() -> dict[str, Any]:
    """The bulk jobs' item outcomes by action, and the jobs by status: one grouped query."""
    from claims.models import BulkJob

    items: dict[tuple[str, str], int] = {}
    by_status: dict[str, int] = {}
    rows = (
        BulkJob.objects.values("action", "status")
        .annotate(
            jobs=Count("id"),
            done=Sum("done_count"),
            moved=Sum("moved_count"),
            refused=Sum("refused_count"),
        )
        .order_by()
    )
    for row in rows:
        by_status[row["status"]] = by_status.get(row["status"], 0) + row["jobs"]
        for outcome in ("done", "moved", "refused"):
            key = (row["action"], outcome)
            items[key] = items.get(key, 0) + int(row[outcome] or 0)
    return {"bulk_items": items, "bulk_jobs_by_status": by_status}


@dataclass
class _EngineTotals:
    by_status: dict[str, int]
    active_claims: int = 0
    healthy: int = 0
    candidates: dict[str, int] = field(default_factory=dict)
    summaries: list[dict[str, Any]] = field(default_factory=list)
    held_by_live_engine: dict[str, int] = field(default_factory=dict)


def _engine_totals(silent_before: int) -> _EngineTotals:
    """One pass over the engine rows; a live engine silent since ``silent_before`` counts
    in the fleet sums but gets no per-engine series (its id would be a label for good)."""
    from claims.models import Engine, EngineStatus

    totals = _EngineTotals(by_status=dict.fromkeys(EngineStatus.values, 0))
    rows = Engine.objects.values_list(
        "engine_id", "status", "heartbeat_at_ms", "held_count", "pass_summary"
    )
    for engine_id, status, heartbeat_at_ms, held, summary in rows:
        totals.by_status[status] = totals.by_status.get(status, 0) + 1
        totals.summaries.append(summary or {})
        if status not in LIVE_ENGINE_STATUSES:
            continue
        totals.active_claims += held
        if heartbeat_at_ms >= silent_before:
            totals.held_by_live_engine[engine_id] = held
            totals.healthy += status == "active"
        found = (summary or {}).get("reclaim", {}).get("candidates", {})
        for source, count in found.items():
            totals.candidates[source] = totals.candidates.get(source, 0) + int(count)
    return totals


def _backfill_progress() -> float | None:
    """The running backfill's share done (0.0 while its size is unknown), or None."""
    from claims.models import ACTIVE_BACKFILL_STATUSES, BackfillJob

    job = (
        BackfillJob.objects.filter(status__in=ACTIVE_BACKFILL_STATUSES)
        .values_list("processed", "total_estimate")
        .first()
    )
    if job is None:
        return None
    processed, total = job
    return min(1.0, processed / total) if total else 0.0
