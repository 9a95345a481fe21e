"""The fleet the pages benchmark reads: 100,000 workflows and their claims in every state,
50 engines (live, disposing, dead), events, re-drives, counters, backfills; optionally
parked workflows held live on top (a million claims), and in either ownership mode.
"""

from __future__ import annotations

import datetime as dt
import random
import time
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import Permission, User

from claims.fleet_clock import fleet_clock
from claims.models import (
    BackfillJob,
    BackfillStatus,
    ClaimCounter,
    ClaimEvent,
    CounterName,
    Engine,
    EngineSession,
    EngineStatus,
    FleetSnapshot,
    PendingRedrive,
    ReclaimCursor,
    VisibilityWatermark,
    Workflow,
    WorkflowClaim,
    WorkflowStatus,
    WorkflowVisibility,
)
from claims.protocol.pass_histogram import BUCKETS_S
from claims.protocol.reclaim import CURSOR_NAME

from .seed import add_parked, clear
from .setup import analyze, bulk_insert

CLAIMS = 100_000
ENGINES = 50
DEAD_ENGINES = 3
DISPOSING_ENGINES = 1
HELD_LIVE = 40_000  # running, held by a live engine, well inside the TTL
IN_GRACE = 500  # running, past expires_at but inside the grace
EXPIRED = 1_000  # running, held by a dead engine, past the grace
INVALID = 50  # running, a malformed holder
OWNERLESS_RUNNING = 200  # running, claim row without holder (stranded)
UNINDEXED = 300  # no visibility row
EVENTS_PER_FEATURED = 80  # the workflow whose detail fragments are measured
REDRIVES = 40
SEED = 20_260_612
MINUTE_MS = 60_000
OPERATOR = "bench-operator"


@dataclass
class Fleet:
    engines: list[str]
    live_engines: list[str]
    featured: str
    expired_holder: str


def _engine_ids() -> list[str]:
    rng = random.Random(SEED)
    return [f"{rng.getrandbits(128):032x}"[:8] + f"-bench-{n:02d}" for n in range(ENGINES)]


def _pass_summary(rng: random.Random, now: int) -> dict[str, Any]:
    def histogram() -> dict[str, Any]:
        counts = [rng.randint(0, 500) for _ in range(len(BUCKETS_S) + 1)]
        return {"counts": counts, "sum": round(sum(counts) * 0.01, 3)}

    return {
        "renew": {"renewed": 2_000, "failed": 0, "at_ms": now - 1_000, "duration_ms": 40.0},
        "reclaim": {
            "status": "completed",
            "reclaimed": 3,
            "attempted": 5,
            "errors": 0,
            "candidates": {
                "stale_holders": 4,
                "unheld_indexed": 1,
                "authoritative_scan": 0,
                "pending_redrives": 2,
            },
            "scanned": 500,
            "wrapped": False,
            "at_ms": now - 2_000,
            "duration_ms": 25.0,
        },
        "wake": {"driven": 2, "at_ms": now - 1_500, "duration_ms": 1.0},
        "histograms": {name: histogram() for name in ("renew", "reclaim", "wake")},
    }


def clear_fleet() -> None:
    clear()  # the tables a fleet lives in, by TRUNCATE on PostgreSQL
    for model in (
        ReclaimCursor,
        PendingRedrive,
        ClaimCounter,
        Engine,
        BackfillJob,
        VisibilityWatermark,
        FleetSnapshot,
    ):
        model.objects.all().delete()
    User.objects.filter(username=OPERATOR).delete()


def arrange(sessions: bool = False, parked: int = 0) -> tuple[Fleet, dict[str, Any]]:
    """100,000 workflows, each with a claim row: 40,000 held live by 46 engines, some in
    grace, expired (held by the dead engines), invalid or stranded, the rest finished;
    and ``parked`` more, running and held live by the live engines (loaded in SQL).

    With ``sessions`` (the engine-lease mode) every holder names session 1 of its engine and
    stores no expiry: the live engines' sessions are live, the disposing engine's is in
    grace (the in-grace claims are its), the dead engines' expired long ago."""
    clear_fleet()
    started = time.perf_counter()
    rng = random.Random(SEED)
    now = fleet_clock()()
    engines = _engine_ids()
    dead = engines[:DEAD_ENGINES]
    disposing = engines[DEAD_ENGINES : DEAD_ENGINES + DISPOSING_ENGINES]
    live = engines[DEAD_ENGINES + DISPOSING_ENGINES :]
    Engine.objects.bulk_create(
        Engine(
            engine_id=engine_id,
            hostname=f"host-{n % 5}",
            pid=1_000 + n,
            queue=f"engine.{engine_id}",
            started_at_ms=now - 3_600_000,
            heartbeat_at_ms=now - (20 * MINUTE_MS if engine_id in dead else 1_000),
            clock_skew_ms=rng.randint(-40, 40),
            clock_error_ms=1,
            status=(
                EngineStatus.DEAD
                if engine_id in dead
                else EngineStatus.DISPOSING
                if engine_id in disposing
                else EngineStatus.ACTIVE
            ),
            held_count=(HELD_LIVE + parked) // len(live),
            version="0.1.0",
            pass_summary=_pass_summary(rng, now),
        )
        for n, engine_id in enumerate(engines)
    )
    ids = [f"wf-{n:06d}" for n in range(CLAIMS)]
    order = list(range(CLAIMS))
    rng.shuffle(order)
    cuts = {}
    position = 0
    for kind, count in (
        ("live", HELD_LIVE),
        ("grace", IN_GRACE),
        ("expired", EXPIRED),
        ("invalid", INVALID),
        ("stranded", OWNERLESS_RUNNING),
    ):
        cuts[kind] = sorted(order[position : position + count])
        position += count
    kind_of = {n: kind for kind, members in cuts.items() for n in members}
    status = {
        n: WorkflowStatus.RUNNING
        if n in kind_of
        else (WorkflowStatus.COMPLETED if rng.random() < 0.8 else WorkflowStatus.FAILED)
        for n in range(CLAIMS)
    }
    created = now - 86_400_000
    bulk_insert(
        Workflow,
        [
            Workflow(
                workflow_id=ids[n],
                workflow_type=("order", "invoice", "ledger")[n % 3],
                status=status[n],
                state={"input": {"items": n % 7}, "steps": {}},
                created_at_ms=created + n,
                updated_at_ms=created + n,
            )
            for n in range(CLAIMS)
        ],
    )
    hidden = set(rng.sample(range(CLAIMS), UNINDEXED))
    bulk_insert(
        WorkflowVisibility,
        [
            WorkflowVisibility(
                workflow_id=ids[n],
                status=status[n],
                workflow_type=("order", "invoice", "ledger")[n % 3],
                updated_at_ms=created + n,
            )
            for n in range(CLAIMS)
            if n not in hidden
        ],
    )

    def claim(n: int) -> WorkflowClaim:
        epoch = 1 + n % 5
        kind = kind_of.get(n)
        row = WorkflowClaim(workflow_id=ids[n], epoch=epoch)
        if kind is None or kind == "stranded":
            return row
        engine = dead[n % len(dead)] if kind == "expired" else live[n % len(live)]
        expires = {
            "live": now + 10 * MINUTE_MS + n % 20_000,
            "grace": now - 2_000,
            "expired": now - 10 * MINUTE_MS,
            "invalid": now + MINUTE_MS,
        }[kind]
        row.holder_engine_id = engine
        row.holder_epoch = epoch + 1 if kind == "invalid" else epoch  # a mismatch: invalid
        row.holder_expires_at_ms = expires
        row.holder_claimed_at_ms = expires - 30_000
        if sessions:
            if kind == "grace":
                row.holder_engine_id = disposing[0]
            row.holder_expires_at_ms, row.holder_session_epoch = None, 1
        return row

    if sessions:
        session_expiry = {
            **dict.fromkeys(live, now + 10 * MINUTE_MS),
            **dict.fromkeys(disposing, now - 2_000),
            **dict.fromkeys(dead, now - 10 * MINUTE_MS),
        }
        EngineSession.objects.bulk_create(
            EngineSession(
                engine_id=engine_id,
                epoch=1,
                expires_at_ms=expires,
                renewed_at_ms=expires - 30_000,
                started_at_ms=now - 3_600_000,
            )
            for engine_id, expires in session_expiry.items()
        )

    bulk_insert(WorkflowClaim, [claim(n) for n in range(CLAIMS)])
    featured = ids[cuts["live"][len(cuts["live"]) // 2]]
    events = [
        ClaimEvent(
            workflow_id=ids[n],
            kind="acquired",
            epoch_before=None,
            epoch_after=1 + n % 5,
            engine_id=live[n % len(live)],
            at_ms=now - 3_600_000 + n,
        )
        for n in cuts["live"]
    ]
    events += [
        ClaimEvent(
            workflow_id=featured,
            kind=("takeover", "deposed", "forced_release", "acquired")[i % 4],
            epoch_before=i,
            epoch_after=i + 1,
            engine_id=live[i % len(live)],
            actor="alice" if i % 4 == 2 else None,
            reason="bench" if i % 4 == 2 else "",
            at_ms=now - (EVENTS_PER_FEATURED - i) * MINUTE_MS,
        )
        for i in range(EVENTS_PER_FEATURED)
    ]
    bulk_insert(ClaimEvent, events)
    PendingRedrive.objects.bulk_create(
        PendingRedrive(
            engine_id=live[i % len(live)],
            workflow_id=ids[cuts["live"][i]],
            epoch=1 + cuts["live"][i] % 5,
            attempts=1 + i % 4,
            last_error="OperationalError: could not serialize access",
            first_failed_at_ms=now - i * 10_000,
            last_failed_at_ms=now - 1_000,
        )
        for i in range(REDRIVES)
    )
    ClaimCounter.objects.bulk_create(
        ClaimCounter(engine_id=engine_id, name=name, value=rng.randint(0, 100_000))
        for engine_id in engines
        for name in CounterName.values
    )
    ReclaimCursor.objects.create(
        name=CURSOR_NAME,
        last_workflow_id=ids[CLAIMS // 3],
        wraps=7,
        scanned_total=7 * CLAIMS + CLAIMS // 3,
        updated_at_ms=now - 2_000,
        updated_by=live[0],
    )
    moment = dt.datetime.fromtimestamp(now / 1000, tz=dt.UTC)
    BackfillJob.objects.bulk_create(
        BackfillJob(
            status=BackfillStatus.SUCCEEDED,
            requested_by="alice",
            run_at=moment - dt.timedelta(days=i + 1),
            started_at=moment - dt.timedelta(days=i + 1),
            finished_at=moment - dt.timedelta(days=i + 1) + dt.timedelta(minutes=3),
            processed=CLAIMS,
            inserted=10,
            total_estimate=CLAIMS,
        )
        for i in range(3)
    )
    VisibilityWatermark.objects.create(pk=1, version=3, built_at_ms=now - 86_400_000)
    if parked:
        add_parked(parked, live, now_ms=now, sessions=sessions)
    analyzed = analyze()
    fleet = Fleet(engines, live, featured, dead[0])
    return fleet, {"load_s": round(time.perf_counter() - started, 1), "analyzed": analyzed}


def operator() -> User:
    user = User.objects.create_user(OPERATOR, password=None, is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="claims",
            codename__in=[
                "force_claim",
                "cancel_workflow",
                "suspend_workflow",
                "schedule_backfill",
            ],
        )
    )
    return user


def take_snapshot() -> None:
    from claims.conf import claim_timing
    from claims.services.engines import fleet_snapshot_take

    fleet_snapshot_take(now_ms=fleet_clock()(), timing=claim_timing())


def take_recount() -> None:
    """The snapshot with its periodic recount from the rows due."""
    from claims.models import FleetCounts

    FleetCounts.objects.update(recounted_at_ms=0)
    take_snapshot()


def keep_alive(fleet: Fleet) -> None:
    """What the live engines write every renew interval: a heartbeat, and in the engine-lease
    mode a renewed session; without them they would turn silent (and their sessions lapse)
    while the endpoints are measured, and the pages would be measured for a dying fleet."""
    now = fleet_clock()()
    alive = fleet.engines[DEAD_ENGINES:]  # the live ones and the disposing one
    Engine.objects.filter(engine_id__in=alive).update(heartbeat_at_ms=now - 1_000)
    EngineSession.objects.filter(engine_id__in=fleet.live_engines).update(
        expires_at_ms=now + 10 * MINUTE_MS, renewed_at_ms=now - 1_000
    )
