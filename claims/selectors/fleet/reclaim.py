"""The reclaim scan: where the shared cursor stands in the keyspace, and what passes found."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q

from claims.models import Engine, ReclaimCursor, Workflow, WorkflowStatus
from claims.protocol.constants import AUTHORITATIVE_SCAN_LIMIT
from claims.protocol.reclaim import CURSOR_NAME
from claims.protocol.timing import ClaimTiming
from claims.selectors.engines.liveness import LIVE_ENGINE_STATUSES
from claims.selectors.engines.passes import pass_part

from .snapshot import snapshot_workflow_counts

# (key in the pass summary, label, column heading)
SOURCES = (
    ("stale_holders", "Expired or invalid holders", "stale"),
    ("unheld_indexed", "Running with no holder, from the index", "unheld (index)"),
    ("authoritative_scan", "Running with no holder, from the table scan", "unheld (scan)"),
    ("pending_redrives", "This engine's pending re-drives", "re-drives"),
)


@dataclass(frozen=True)
class ReclaimPass:
    engine_id: str
    at_ms: int | None
    duration_ms: float | None
    status: str
    candidates: dict[str, int]  # by source, in SOURCES order: the table's column order
    scanned: int
    wrapped: bool
    attempted: int
    reclaimed: int
    errors: int


@dataclass(frozen=True)
class ReclaimProgress:
    cursor: ReclaimCursor | None
    position: int  # workflow ids at or before the cursor
    total: int
    running: int
    passes: list[ReclaimPass]
    source_totals: dict[str, int]
    rows_per_interval: int
    eta_ms: int | None
    as_of_ms: int

    @property
    def sweeps_whole_table(self) -> bool:
        """The table fits in one scan page: every pass reads all of it and wraps."""
        return 0 < self.total <= AUTHORITATIVE_SCAN_LIMIT

    @property
    def percent(self) -> float:
        return round(100 * self.position / self.total, 1) if self.total else 0.0


def _workflow_counts(last: str | None, now_ms: int, timing: ClaimTiming) -> dict[str, int]:
    """Workflows in all, running, and at or before the cursor. With beat's fresh snapshot
    the first two are its counts and the position is an index-only count of the ids up to
    the cursor; without one, one count over every workflow (~130 ms at a million)."""
    counted = snapshot_workflow_counts(now_ms=now_ms, timing=timing)
    if counted is None:
        # A cursor of None means the scan starts over: position 0.
        at_cursor = Q(workflow_id__lte=last) if last else Q(workflow_id__isnull=True)
        return Workflow.objects.aggregate(
            total=Count("pk"),
            position=Count("pk", filter=at_cursor),
            running=Count("pk", filter=Q(status=WorkflowStatus.RUNNING)),
        )
    total = sum(counted.values())
    # The snapshot may be a renew interval behind the count: never past the end.
    position = min(total, Workflow.objects.filter(workflow_id__lte=last).count()) if last else 0
    return {"total": total, "position": position, "running": counted.get(WorkflowStatus.RUNNING, 0)}


def reclaim_progress(*, now_ms: int, timing: ClaimTiming) -> ReclaimProgress:
    """Three or four queries: the cursor, the workflow counts (from beat's fresh snapshot
    where it can), the live engines."""
    cursor = ReclaimCursor.objects.filter(name=CURSOR_NAME).first()
    last = cursor.last_workflow_id if cursor is not None else None
    counts = _workflow_counts(last, now_ms, timing)
    passes = []
    for engine_id, summary in (
        Engine.objects.filter(status__in=LIVE_ENGINE_STATUSES)
        .order_by("engine_id")
        .values_list("engine_id", "pass_summary")
    ):
        part: dict[str, Any] = pass_part(summary, "reclaim")
        if not part:
            continue
        found = part.get("candidates")
        found = found if isinstance(found, dict) else {}
        passes.append(
            ReclaimPass(
                engine_id=engine_id,
                at_ms=part.get("at_ms"),
                duration_ms=part.get("duration_ms"),
                status=str(part.get("status", "")),
                candidates={key: int(found.get(key, 0)) for key, _, _ in SOURCES},
                scanned=int(part.get("scanned", 0)),
                wrapped=bool(part.get("wrapped", False)),
                attempted=int(part.get("attempted", 0)),
                reclaimed=int(part.get("reclaimed", 0)),
                errors=int(part.get("errors", 0)),
            )
        )
    totals = {key: sum(p.candidates[key] for p in passes) for key, _, _ in SOURCES}
    # The fleet reads a page per tick (the scan is paced for the fleet, docs/design.md §4):
    # the engines' last passes, all on the latest tick, together read what an interval reads.
    per_interval = sum(min(p.scanned, AUTHORITATIVE_SCAN_LIMIT) for p in passes)
    remaining = max(0, counts["total"] - counts["position"])
    eta = None
    if per_interval:
        eta = -(-remaining // per_interval) * timing.renew_interval_ms
    return ReclaimProgress(
        cursor=cursor,
        position=counts["position"],
        total=counts["total"],
        running=counts["running"],
        passes=passes,
        source_totals=totals,
        rows_per_interval=per_interval,
        eta_ms=eta,
        as_of_ms=now_ms,
    )


def reclaim_cursor_get(name: str = CURSOR_NAME) -> ReclaimCursor:
    """The scan cursor; an unsaved one at the start of the keyspace before the first pass."""
    return ReclaimCursor.objects.filter(name=name).first() or ReclaimCursor(name=name)
