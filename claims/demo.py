"""A demo fleet for a first look at the dashboard: engines, workflows and some trouble."""

from __future__ import annotations

import random
import socket
from dataclasses import dataclass

from django.db import transaction

from claims.conf import claim_timing
from claims.models import (
    ClaimEvent,
    Engine,
    EngineStatus,
    Workflow,
    WorkflowClaim,
    WorkflowStatus,
    WorkflowVisibility,
)
from claims.protocol import Clock

DEMO_TYPES = ("order", "invoice", "ledger")
# Engines of an earlier, crashed run; the engines started by scripts/run take over from them.
DEMO_ENGINES = ("demo-engine-a", "demo-engine-b", "demo-engine-c")
# An engine that died without releasing: its claims are stranded until reclaimed.
VANISHED_ENGINE = "demo-engine-vanished"


def demo_input(workflow_type: str, rng: random.Random) -> dict[str, object]:
    """Inputs that keep demo workflows running long enough to be watched."""
    if workflow_type == "order":
        return {"items": rng.randint(1, 5), "sleep": rng.randint(20, 240)}
    if workflow_type == "ledger":
        return {"steps": rng.randint(2, 5), "step_delay_ms": 200, "sleep": rng.randint(10, 120)}
    return {"lines": [rng.randint(100, 5_000) for _ in range(rng.randint(1, 4))]}


def demo_trickle_start(*, count: int, seed: int | None = None) -> list[str]:
    """Start ``count`` new demo workflows without an engine: the next reclaim pass claims them."""
    from claims.services import workflow_start

    rng = random.Random(seed)
    started = []
    for _ in range(count):
        workflow_type = rng.choice(DEMO_TYPES)
        workflow = workflow_start(workflow_type=workflow_type, input=demo_input(workflow_type, rng))
        started.append(workflow.workflow_id)
    return started


@dataclass(frozen=True)
class DemoSeedSummary:
    workflows: int
    held: int
    ownerless_running: int
    unindexed_running: int
    stranded_by_dead_engine: int


def demo_fleet_seed(*, clock: Clock, workflows: int = 300, seed: int = 7) -> DemoSeedSummary:
    """Create the demo fleet once; a database that already has workflows is left alone."""
    if Workflow.objects.exists():
        return DemoSeedSummary(Workflow.objects.count(), 0, 0, 0, 0)
    rng = random.Random(seed)
    now = clock()
    ttl = claim_timing().ttl_ms
    rows: list[Workflow] = []
    claims: list[WorkflowClaim] = []
    events: list[ClaimEvent] = []
    counts = {"held": 0, "ownerless": 0, "unindexed": 0, "dead": 0}
    unindexed: set[str] = set()
    for n in range(workflows):
        workflow_type = DEMO_TYPES[n % len(DEMO_TYPES)]
        workflow_id = f"{workflow_type}-{n:05d}"
        created = now - rng.randint(60_000, 3_600_000)
        status = rng.choices(
            [WorkflowStatus.RUNNING, WorkflowStatus.COMPLETED, WorkflowStatus.FAILED],
            weights=[6, 3, 1],
        )[0]
        rows.append(
            Workflow(
                workflow_id=workflow_id,
                workflow_type=workflow_type,
                status=status,
                state={"input": demo_input(workflow_type, rng), "steps": {}},
                created_at_ms=created,
                updated_at_ms=created,
            )
        )
        epoch = rng.randint(1, 4)
        if status != WorkflowStatus.RUNNING:
            claims.append(WorkflowClaim(workflow_id=workflow_id, epoch=epoch))
            continue
        fate = rng.random()
        if fate < 0.08:
            counts["ownerless"] += 1
            claims.append(WorkflowClaim(workflow_id=workflow_id, epoch=epoch))
        elif fate < 0.14:
            counts["unindexed"] += 1
            unindexed.add(workflow_id)
        elif fate < 0.22:
            counts["dead"] += 1
            claimed = created + 1_000
            claims.append(
                WorkflowClaim(
                    workflow_id=workflow_id,
                    epoch=epoch,
                    holder_engine_id=VANISHED_ENGINE,
                    holder_epoch=epoch,
                    holder_expires_at_ms=claimed + ttl,
                    holder_claimed_at_ms=claimed,
                )
            )
        else:
            counts["held"] += 1
            engine = DEMO_ENGINES[n % len(DEMO_ENGINES)]
            claims.append(
                WorkflowClaim(
                    workflow_id=workflow_id,
                    epoch=epoch,
                    holder_engine_id=engine,
                    holder_epoch=epoch,
                    holder_expires_at_ms=now + ttl,
                    holder_claimed_at_ms=created,
                )
            )
            events.append(
                ClaimEvent(
                    workflow_id=workflow_id,
                    kind="acquired",
                    epoch_before=epoch - 1 or None,
                    epoch_after=epoch,
                    engine_id=engine,
                    at_ms=created,
                )
            )
    with transaction.atomic():
        Workflow.objects.bulk_create(rows)
        WorkflowVisibility.objects.bulk_create(
            WorkflowVisibility(
                workflow_id=row.workflow_id,
                status=row.status,
                workflow_type=row.workflow_type,
                updated_at_ms=row.updated_at_ms,
            )
            for row in rows
            if row.workflow_id not in unindexed
        )
        WorkflowClaim.objects.bulk_create(claims)
        ClaimEvent.objects.bulk_create(events)
        hostname = socket.gethostname()
        Engine.objects.bulk_create(
            Engine(
                engine_id=engine_id,
                hostname=hostname,
                pid=0,
                # A fleet that crashed: its live-looking claims lapse and get taken over
                # by the real engines within a TTL or so of the start.
                started_at_ms=now - 3_600_000,
                heartbeat_at_ms=now - 4 * ttl,
                status=EngineStatus.DEAD,
                held_count=sum(c.holder_engine_id == engine_id for c in claims),
                version="demo",
            )
            for engine_id in DEMO_ENGINES
        )
    return DemoSeedSummary(
        workflows, counts["held"], counts["ownerless"], counts["unindexed"], counts["dead"]
    )
