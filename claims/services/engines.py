"""Writes about engines: registration, heartbeats, counters, declaring the silent dead,
and the fleet snapshot the overview reads. The engines' own writes: no read-only switch
or operator reason applies (read-only stops the dashboard, never the fleet)."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping
from typing import Any

from django.db import connection, transaction

from claims.models import (
    Engine,
    EngineStatus,
    FleetSnapshot,
    PendingRedrive,
    RetiredPassHistograms,
)
from claims.protocol.log_events import log_event
from claims.protocol.metrics import SessionCount
from claims.protocol.pass_histogram import summed_histograms
from claims.protocol.timing import ClaimTiming
from claims.selectors.engines.liveness import LIVE_ENGINE_STATUSES
from claims.store.sql.counters import counter_statements

logger = logging.getLogger("weftboard.claims")

ENGINE_VERSION = "0.1.0"
# An engine silent this many TTLs is dead: its claims have long been reclaimable.
DEAD_AFTER_TTLS = 3


def engine_register(*, engine_id: str, queue: str, now_ms: int, name: str = "") -> Engine:
    """Record a starting engine; ``name`` is its Celery worker's node name (``engine1@host``)."""
    return Engine.objects.create(
        engine_id=engine_id,
        name=name,
        hostname=socket.gethostname(),
        pid=os.getpid(),
        queue=queue,
        started_at_ms=now_ms,
        heartbeat_at_ms=now_ms,
        status=EngineStatus.ACTIVE,
        version=ENGINE_VERSION,
    )


def engine_heartbeat(
    *,
    engine_id: str,
    now_ms: int,
    held_count: int,
    clock_skew_ms: int,
    clock_error_ms: int,
    pass_summary: Mapping[str, Any],
) -> bool:
    """One UPDATE of the engine's row while it is active or disposing; returns whether it
    applied. It never writes the status: an engine beat marked dead stays dead (its claims
    were takeable long before, and the fleet may have switched its ownership mode since),
    so a heartbeat that applies nothing tells a revived engine it is dead. The condition
    is judged when the statement runs, so a heartbeat sent before beat's mark and applied
    after it changes nothing either. A heartbeat whose answer was lost tells nothing, and
    the next one asks again: applied or not, it wrote no status."""
    updated = Engine.objects.filter(engine_id=engine_id, status__in=LIVE_ENGINE_STATUSES).update(
        heartbeat_at_ms=now_ms,
        held_count=held_count,
        clock_skew_ms=clock_skew_ms,
        clock_error_ms=clock_error_ms,
        pass_summary=dict(pass_summary),
    )
    return updated == 1


def engine_set_status(*, engine_id: str, status: EngineStatus, now_ms: int) -> None:
    """The engine's own steps out (disposing, then stopped), written only over a live
    status: never over dead, which beat wrote and which stays."""
    Engine.objects.filter(engine_id=engine_id, status__in=LIVE_ENGINE_STATUSES).update(
        status=status, heartbeat_at_ms=now_ms
    )


def engines_mark_silent_dead(*, now_ms: int, ttl_ms: int) -> int:
    """Mark engines dead after DEAD_AFTER_TTLS x TTL without a heartbeat; returns how many.

    Then drop the pending re-drives of dead and stopped engines: by now their claims have
    lapsed and been taken over (TTL + grace is well inside 3 x TTL), so each such row is
    an epoch nobody will drive again, and would keep the overview's re-drive alert and
    ``weftboard_pending_redrives`` up for good. An engine that wakes after this finds it
    no longer holds those claims, and would drop the rows itself.
    """
    with transaction.atomic():
        silent = Engine.objects.filter(
            status__in=[EngineStatus.ACTIVE, EngineStatus.DISPOSING],
            heartbeat_at_ms__lt=now_ms - DEAD_AFTER_TTLS * ttl_ms,
        )
        dead = list(silent.select_for_update().values_list("engine_id", "heartbeat_at_ms"))
        marked = silent.filter(engine_id__in=[row[0] for row in dead]).update(
            status=EngineStatus.DEAD
        )
        gone = Engine.objects.filter(status__in=[EngineStatus.DEAD, EngineStatus.STOPPED])
        PendingRedrive.objects.filter(engine_id__in=gone.values("engine_id")).delete()
    for engine_id, heartbeat_at_ms in dead:  # once: a dead engine is never marked again
        log_event(
            logger,
            logging.WARNING,
            "engine-dead",
            engine=engine_id,
            silent_s=(now_ms - heartbeat_at_ms) // 1000,
        )
    return marked


def engines_prune_history(*, now_ms: int, keep_ms: int) -> int:
    """Delete stopped and dead engines whose last heartbeat (a stopping engine writes one
    as it stops) is older than ``keep_ms``; returns how many. Engine rows only: claim rows,
    claim events and counters outlive their engine (fleet counters never go down), and a
    claim row naming a pruned holder still reads as held by an engine that is not live.
    Their pass histograms are added to RetiredPassHistograms in the same transaction, so
    the fleet's histogram never goes down."""
    with transaction.atomic():
        # Locked first, so two prunes at once cannot both add the same engine's buckets:
        # the second waits here, then finds the rows gone.
        retired, _ = RetiredPassHistograms.objects.select_for_update().get_or_create(id=1)
        pruned = list(
            Engine.objects.select_for_update()
            .filter(
                status__in=[EngineStatus.STOPPED, EngineStatus.DEAD],
                heartbeat_at_ms__lt=now_ms - keep_ms,
            )
            .values_list("engine_id", "pass_summary")
        )
        if not pruned:
            return 0
        summaries = [retired.summary, *(summary or {} for _, summary in pruned)]
        retired.summary = {"histograms": summed_histograms(summaries)}
        retired.engines += len(pruned)
        retired.save(update_fields=["summary", "engines"])
        Engine.objects.filter(engine_id__in=[engine_id for engine_id, _ in pruned]).delete()
    return len(pruned)


def session_counter_totals(counts: Mapping[SessionCount, int]) -> dict[str, int]:
    """The session counts of claims.protocol.metrics under their counter names:
    ``closed-expired`` is ``session_closed_expired``."""
    return {"session_" + kind.replace("-", "_"): value for kind, value in counts.items()}


def counters_record(*, engine_id: str, totals: Mapping[str, int]) -> None:
    """Record this engine's counter totals since it started, in one statement.

    Totals, not increments: a flush whose commit answer was lost and is sent again
    writes the same numbers, so fleet sums stay exact. A value never goes down, even
    if an older flush landed late.
    """
    rows = [(engine_id, name, int(value)) for name, value in totals.items() if value > 0]
    if not rows:
        return
    sql = counter_statements().record.for_rows(len(rows))
    with connection.cursor() as cursor:
        cursor.execute(sql, [value for row in rows for value in row])


def fleet_snapshot_take(*, now_ms: int, timing: ClaimTiming) -> None:
    """Count the fleet once for every overview poll until the next snapshot (from the kept
    counts, claims.services.fleet_counts), and add it to the charts' history (pruned here
    too, so beat needs no other task)."""
    from claims.selectors.fleet.history import history_row

    from .fleet_counts import kept_fleet_scan
    from .fleet_history import fleet_history_prune, fleet_history_record

    scan = kept_fleet_scan(now_ms=now_ms, timing=timing)
    FleetSnapshot.objects.update_or_create(
        id=1, defaults={"taken_at_ms": scan.taken_at_ms, "data": scan.as_json()}
    )
    # The charts' history (docs/design.md §7): kept and pruned here, on beat's cadence.
    row = history_row(by_state=scan.by_state, by_holder=scan.by_holder)
    fleet_history_record(taken_at_ms=scan.taken_at_ms, data=row)
    fleet_history_prune(now_ms=now_ms)
