"""The overview: fleet health, outcome counters and the alerts an on-call engineer acts on.

The claim and workflow aggregates come from the snapshot beat takes once per renew
interval (one query, claims.selectors.fleet.snapshot); without a fresh one they are
scanned now. Six more queries whatever the size of the fleet, plus one listing examples
when some claims are held by silent engines. Which alerts fire is decided from what these
read by the pure rules in ``claims.selectors.fleet.alert_rules``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import (
    Count,
    Min,
    Q,
)

from claims.models import (
    Engine,
    EngineStatus,
    PendingRedrive,
    VisibilityWatermark,
    WorkflowClaim,
)
from claims.protocol.states import ClaimState
from claims.protocol.timing import ClaimTiming
from claims.selectors.engines.liveness import LIVE_ENGINE_STATUSES, silent_before_ms
from claims.selectors.engines.passes import PASS_NAMES, pass_part

from .alert_rules import (
    EXAMPLES,
    Alert,
    AlertInputs,
    LiveEngine,
    fleet_alerts,
    late_before_ms,
    silent_holders,
)
from .snapshot import latest_fleet_scan
from .totals import counter_totals

RECENTLY_DEAD_MS = 3_600_000


@dataclass(frozen=True)
class PassTimes:
    name: str
    newest_ms: int | None
    oldest_ms: int | None
    slowest_ms: float | None


@dataclass(frozen=True)
class Overview:
    as_of_ms: int
    scanned_at_ms: int  # when the claim and workflow aggregates were taken
    timing: ClaimTiming
    engines_by_status: dict[str, int]
    claims_by_state: dict[ClaimState, int]
    claim_total: int
    workflows_by_status: dict[str, int]
    counters: dict[str, int]
    redrives: int
    redrives_ageing: int
    oldest_redrive_ms: int | None
    passes: list[PassTimes]
    alerts: list[Alert]
    engines_silent: int = 0  # live by status, no heartbeat for TTL + 2 x renew interval


def _pass_times(live: Sequence[LiveEngine]) -> list[PassTimes]:
    """Per pass, its newest and oldest finish over the live engines, and its slowest run."""
    times = []
    for name in PASS_NAMES:
        parts = [pass_part(e.pass_summary, name) for e in live]
        ats = [int(p["at_ms"]) for p in parts if "at_ms" in p]
        durations = [float(p["duration_ms"]) for p in parts if "duration_ms" in p]
        times.append(
            PassTimes(
                name, max(ats, default=None), min(ats, default=None), max(durations, default=None)
            )
        )
    return times


def _redrive_totals(now_ms: int, timing: ClaimTiming) -> dict[str, Any]:
    """Pending re-drives: how many, how many first failed over a TTL ago, the oldest."""
    return PendingRedrive.objects.aggregate(
        total=Count("pk"),
        ageing=Count("pk", filter=Q(first_failed_at_ms__lt=now_ms - timing.ttl_ms)),
        oldest=Min("first_failed_at_ms"),
    )


def _engine_totals(now_ms: int, timing: ClaimTiming) -> dict[str, int]:
    """Engines per status, how many were marked dead after a heartbeat within the hour, and
    how many live ones are silent (claims.selectors.engines.health)."""
    return Engine.objects.aggregate(
        silent=Count(
            "pk",
            filter=Q(
                status__in=LIVE_ENGINE_STATUSES,
                heartbeat_at_ms__lt=silent_before_ms(now_ms, timing),
            ),
        ),
        **{status: Count("pk", filter=Q(status=status)) for status in EngineStatus.values},
        recently_dead=Count(
            "pk",
            filter=Q(status=EngineStatus.DEAD, heartbeat_at_ms__gte=now_ms - RECENTLY_DEAD_MS),
        ),
    )


def _live_engines() -> list[LiveEngine]:
    rows = (
        Engine.objects.filter(status__in=LIVE_ENGINE_STATUSES)
        .order_by("engine_id")
        .values_list("engine_id", "heartbeat_at_ms", "clock_skew_ms", "pass_summary")
    )
    return [LiveEngine(*row) for row in rows]


def _claim_examples(holders: list[str]) -> list[str]:
    """A few workflows whose claims ``holders`` hold; no query when there are none."""
    if not holders:
        return []
    return list(
        WorkflowClaim.objects.filter(holder_engine_id__in=holders)
        .order_by("workflow_id")
        .values_list("workflow_id", flat=True)[:EXAMPLES]
    )


def overview(*, now_ms: int, timing: ClaimTiming) -> Overview:
    """Everything the overview page shows, read at ``now_ms`` on the fleet clock."""
    scan = latest_fleet_scan(now_ms=now_ms, timing=timing)
    redrive = _redrive_totals(now_ms, timing)
    engine_totals = _engine_totals(now_ms, timing)
    live = _live_engines()
    silent = silent_holders(scan.by_holder, live, late_before_ms(now_ms, timing))
    stale_examples = _claim_examples(silent)
    counters = counter_totals()
    alerts = fleet_alerts(
        AlertInputs(
            now_ms=now_ms,
            timing=timing,
            ownerless_running=scan.ownerless_running,
            ownerless_examples=scan.ownerless_examples,
            claims_by_holder=scan.by_holder,
            stale_examples=stale_examples,
            redrives_ageing=redrive["ageing"],
            recently_dead=engine_totals["recently_dead"],
            live_engines=live,
            index_complete=VisibilityWatermark.objects.exists(),
        )
    )
    return Overview(
        as_of_ms=now_ms,
        scanned_at_ms=scan.taken_at_ms,
        timing=timing,
        engines_by_status={status: engine_totals[status] for status in EngineStatus.values},
        claims_by_state=scan.by_state,
        claim_total=sum(scan.by_state.values()),
        workflows_by_status=scan.workflows_by_status,
        counters=counters,
        redrives=redrive["total"],
        redrives_ageing=redrive["ageing"],
        oldest_redrive_ms=redrive["oldest"],
        passes=_pass_times(live),
        alerts=alerts,
        engines_silent=engine_totals["silent"],
    )
