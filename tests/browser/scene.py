"""Rows for the browser tests: a small fleet to act on, and a busy one to look at.

Times are relative to the fleet clock (the database's), which is what the pages judge by.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
from typing import Any

from django.db.models import F

from claims.fleet_clock import fleet_clock
from claims.models import (
    BackfillJob,
    BackfillStatus,
    ClaimEvent,
    Engine,
    EngineStatus,
    PendingRedrive,
    ReclaimCursor,
    VisibilityWatermark,
    Workflow,
    WorkflowClaim,
    WorkflowStatus,
)
from claims.protocol.pass_histogram import BUCKETS_S
from claims.protocol.reclaim import CURSOR_NAME
from claims.services import engines
from claims.services.demo_fleet import DEMO_ENGINES, demo_fleet_seed
from tests import factories

TTL_MS = 30_000
RENEW_MS = 5_000
# The workflow the action tests act on, at the epoch of the example.
FEATURED = "payment-00042"
FEATURED_EPOCH = 41
HOLDER = "e-7f3"
OTHER = "e-91c"
THIRD = "e-c04"
LIVE_ENGINES = (HOLDER, OTHER, THIRD)


def now_ms() -> int:
    return fleet_clock()()


def make_engine(
    engine_id: str,
    *,
    status: str = EngineStatus.ACTIVE,
    heartbeat_ago_ms: int = 800,
    skew_ms: int = 3,
    summary: dict[str, Any] | None = None,
    held: int = 0,
) -> Engine:
    now = now_ms()
    return Engine.objects.create(
        engine_id=engine_id,
        hostname=f"worker-{engine_id[-3:]}.prod",
        pid=4_000 + sum(map(ord, engine_id)) % 1_000,
        queue=f"engine.{engine_id}",
        started_at_ms=now - 3 * 3_600_000,
        heartbeat_at_ms=now - heartbeat_ago_ms,
        clock_skew_ms=skew_ms,
        clock_error_ms=1,
        status=status,
        held_count=held,
        version="0.1.0",
        pass_summary=summary or {},
    )


def make_workflow(
    workflow_id: str,
    *,
    status: str = WorkflowStatus.RUNNING,
    workflow_type: str = "order",
    state: dict[str, Any] | None = None,
    age_ms: int = 600_000,
) -> Workflow:
    return factories.make_workflow(
        workflow_id,
        status=status,
        workflow_type=workflow_type,
        state=state if state is not None else {"input": {"items": 2}, "steps": {}},
        created_ago_ms=age_ms,
        updated_ago_ms=5_000,
    )


def make_claim(workflow_id: str, **fields: Any) -> WorkflowClaim:
    """A claim row (tests.factories) of a fleet that has run a while: claimed 95 s ago."""
    return factories.make_claim(
        workflow_id, **{"expires_in_ms": 25_000, "claimed_ago_ms": 95_000, **fields}
    )


def move_claim(workflow_id: str, *, to_engine: str) -> int:
    """What another engine's takeover does to the row: epoch + 1, a new holder. Returns it."""
    now = now_ms()
    WorkflowClaim.objects.filter(workflow_id=workflow_id).update(
        epoch=F("epoch") + 1,
        holder_engine_id=to_engine,
        holder_epoch=F("epoch") + 1,
        holder_expires_at_ms=now + TTL_MS,
        holder_claimed_at_ms=now,
    )
    return WorkflowClaim.objects.get(workflow_id=workflow_id).epoch


def pass_summary(seed: int, *, reclaimed: int = 0, stale: int = 0) -> dict[str, Any]:
    """What an engine's heartbeat stores: each pass's last run and duration histograms."""
    rng = random.Random(seed)
    now = now_ms()

    def histogram(low: int, high: int) -> dict[str, Any]:
        counts = [0] * (len(BUCKETS_S) + 1)
        for bucket in range(low, high + 1):
            counts[bucket] = rng.randint(5, 400)
        return {"counts": counts, "sum": round(sum(counts) * BUCKETS_S[low], 3)}

    return {
        "renew": {
            "renewed": rng.randint(20, 60),
            "failed": 0,
            "at_ms": now - rng.randint(200, 3_000),
            "duration_ms": round(rng.uniform(2, 9), 1),
        },
        "reclaim": {
            "status": "completed",
            "reclaimed": reclaimed,
            "attempted": reclaimed + stale,
            "errors": 0,
            "candidates": {
                "stale_holders": stale,
                "unheld_indexed": rng.randint(0, 3),
                "authoritative_scan": rng.randint(0, 2),
                "pending_redrives": 0,
            },
            "scanned": 500,
            "wrapped": False,
            "at_ms": now - rng.randint(200, 3_000),
            "duration_ms": round(rng.uniform(10, 40), 1),
        },
        "wake": {
            "driven": rng.randint(0, 4),
            "at_ms": now - rng.randint(200, 3_000),
            "duration_ms": round(rng.uniform(0.3, 2), 1),
        },
        "histograms": {
            "renew": histogram(0, 2),
            "reclaim": histogram(2, 4),
            "wake": histogram(0, 1),
        },
    }


@dataclass(frozen=True)
class SmallFleet:
    workflow_id: str
    epoch: int
    holder: str
    others: tuple[str, ...]


def small_fleet() -> SmallFleet:
    """Three live engines and one running workflow held at epoch 41, with some history."""
    for n, engine_id in enumerate(LIVE_ENGINES):
        make_engine(engine_id, summary=pass_summary(n), held=1 if engine_id == HOLDER else 0)
    now = now_ms()
    make_workflow(
        FEATURED,
        state={
            "input": {"items": 3},
            "steps": {
                "reserve": {
                    "result": {"reserved": 3},
                    "epoch": 40,
                    "engine_id": OTHER,
                    "at_ms": now - 380_000,
                },
                "charge": {
                    "result": "ch_1f9",
                    "epoch": 41,
                    "engine_id": HOLDER,
                    "at_ms": now - 100_000,
                },
            },
        },
    )
    make_claim(FEATURED, epoch=FEATURED_EPOCH, engine=HOLDER, expires_in_ms=25_000)
    for kind, before, after, engine, ago in (
        ("acquired", None, 40, OTHER, 400_000),
        ("takeover", 40, 41, HOLDER, 120_000),
        ("deposed", 41, 41, OTHER, 110_000),
    ):
        ClaimEvent.objects.create(
            workflow_id=FEATURED,
            kind=kind,
            epoch_before=before,
            epoch_after=after,
            engine_id=engine,
            at_ms=now - ago,
        )
    # A few more held claims, so the claims page has rows to count down.
    for n in range(1, 6):
        workflow_id = f"payment-{n:05d}"
        make_workflow(workflow_id)
        make_claim(workflow_id, epoch=n, engine=LIVE_ENGINES[n % 3], expires_in_ms=20_000 + n)
    return SmallFleet(FEATURED, FEATURED_EPOCH, HOLDER, (OTHER, THIRD))


def busy_fleet() -> SmallFleet:
    """What an on-call engineer finds mid-incident: the demo fleet's crashed engines and
    stranded work, three live engines holding most claims (live, in grace and expired ones),
    counters, re-drives, a reclaim cursor, backfills and an audit trail."""
    # The demo seed only fills an empty database, so it comes first.
    demo_fleet_seed(clock=fleet_clock(), workflows=240, seed=11)
    small = small_fleet()
    now = now_ms()
    # The live engines took over most of the crashed demo fleet's claims; a few of their
    # own are now in grace or expired (one engine is behind on renewals).
    claims = list(
        WorkflowClaim.objects.filter(holder_engine_id__in=DEMO_ENGINES).order_by("workflow_id")
    )
    claimed_at: dict[str, int] = {}
    for n, claim in enumerate(claims):
        engine = LIVE_ENGINES[n % 3]
        expires = now + 4_000 + (n * 997) % 26_000
        if n % 17 == 0:
            expires = now - 3_000  # in grace
        elif n % 29 == 0:
            expires = now - 40_000  # expired: the next reclaim pass takes it
        claim.epoch += 1
        claim.holder_engine_id = engine
        claim.holder_epoch = claim.epoch
        claim.holder_expires_at_ms = expires
        claim.holder_claimed_at_ms = claimed_at[claim.workflow_id] = now - 60_000 - n * 1_000
    WorkflowClaim.objects.bulk_update(
        claims,
        [
            "epoch",
            "holder_engine_id",
            "holder_epoch",
            "holder_expires_at_ms",
            "holder_claimed_at_ms",
        ],
    )
    ClaimEvent.objects.bulk_create(
        ClaimEvent(
            workflow_id=claim.workflow_id,
            kind="takeover",
            epoch_before=claim.epoch - 1,
            epoch_after=claim.epoch,
            engine_id=claim.holder_engine_id,
            at_ms=claimed_at[claim.workflow_id],
        )
        for claim in claims
    )
    for n, engine_id in enumerate(LIVE_ENGINES):
        held = sum(claim.holder_engine_id == engine_id for claim in claims)
        Engine.objects.filter(engine_id=engine_id).update(
            held_count=held, pass_summary=pass_summary(n, reclaimed=4 + n, stale=5 + n)
        )
        engines.counters_record(
            engine_id=engine_id,
            totals={
                "acquired": 120 + 31 * n,
                "takeover": 40 + 7 * n,
                "lost_race": 3 + n,
                "deposed": n,
                "backoff_skipped": 2 * n,
                "renewal_failures": n,
            },
        )
    Engine.objects.filter(engine_id=THIRD).update(clock_skew_ms=18_500)
    redriven = list(
        WorkflowClaim.objects.filter(holder_engine_id=OTHER).order_by("workflow_id")[:2]
    )
    for n, claim in enumerate(redriven):
        PendingRedrive.objects.create(
            engine_id=OTHER,
            workflow_id=claim.workflow_id,
            epoch=claim.epoch,
            attempts=2 + n,
            last_error="OperationalError: could not serialize access due to concurrent update",
            first_failed_at_ms=now - 45_000 * (n + 1),
            last_failed_at_ms=now - 4_000,
        )
    first = Workflow.objects.order_by("workflow_id").values_list("workflow_id", flat=True)
    ReclaimCursor.objects.create(
        name=CURSOR_NAME,
        last_workflow_id=first[150],
        wraps=12,
        scanned_total=12 * 246 + 150,
        updated_at_ms=now - 2_000,
        updated_by=OTHER,
    )
    started = dt.datetime.fromtimestamp((now - 7_200_000) / 1000, tz=dt.UTC)
    BackfillJob.objects.create(
        status=BackfillStatus.FAILED,
        requested_by="alice",
        run_at=started,
        started_at=started,
        finished_at=started + dt.timedelta(seconds=41),
        cursor="order-00120",
        processed=246,
        inserted=14,
        fixed=2,
        conflicts=3,
        total_estimate=246,
        error="3 conflicts (index rows changed while the backfill ran); "
        "the watermark was not written: run it again",
    )
    BackfillJob.objects.create(
        status=BackfillStatus.SUCCEEDED,
        requested_by="alice",
        run_at=started + dt.timedelta(minutes=5),
        started_at=started + dt.timedelta(minutes=5),
        finished_at=started + dt.timedelta(minutes=5, seconds=38),
        processed=246,
        inserted=3,
        fixed=0,
        conflicts=0,
        total_estimate=246,
    )
    VisibilityWatermark.objects.create(pk=1, version=1, built_at_ms=now - 6_900_000)
    ClaimEvent.objects.create(
        workflow_id=redriven[0].workflow_id if redriven else FEATURED,
        kind="forced_release",
        epoch_before=7,
        epoch_after=8,
        engine_id=THIRD,
        actor="alice",
        reason="INC-2291: engine e-c04 wedged on a stuck payment call",
        at_ms=now - 900_000,
    )
    return small


def outcome_samples(count: int = 40, every_ms: int = RENEW_MS) -> list[dict[str, Any]]:
    """A history of the fleet counters as the overview tab keeps it (session storage), ending
    just before now at today's totals, so its sparklines have a few minutes to draw."""
    from django.db.models import Sum

    from claims.models import ClaimCounter, CounterName

    totals = dict.fromkeys(CounterName.values, 0)
    for row in ClaimCounter.objects.values("name").annotate(total=Sum("value")).order_by():
        totals[row["name"]] = int(row["total"] or 0)
    rng = random.Random(5)
    # Bursty progress from 0 to 1 over the samples (the last real poll adds one more step).
    steps = [0.5 + rng.random() * (2.5 if n % 11 > 7 else 0.5) for n in range(count + 1)]
    done = [sum(steps[: n + 1]) / sum(steps) for n in range(count)]
    now = now_ms()
    return [
        {
            "t": now - (count - n) * every_ms - 1_000,
            "c": {name: int(total * (0.6 + 0.4 * done[n])) for name, total in totals.items()},
        }
        for n in range(count)
    ]
