"""A demo fleet for a first look at the dashboard: engines, workflows and some trouble.

Writes like the other services: ``seed_demo`` (the management command) seeds the fleet,
and beat's ``claims.demo_start_workflows`` keeps it busy."""

from __future__ import annotations

import random
import socket
from dataclasses import dataclass, field

from django.db import transaction

from claims.conf import claim_timing
from claims.models import (
    ClaimEvent,
    Engine,
    EngineStatus,
    Workflow,
    WorkflowClaim,
    WorkflowStatus,
)
from claims.protocol import Clock
from claims.runtime.failures import error_summary, failure_record
from claims.services.workflows import workflow_start
from claims.store.workflows import workflow_index

DEMO_TYPES = ("order", "invoice", "ledger")
# Engines of an earlier, crashed run; the engines started by scripts/run take over from them.
DEMO_ENGINES = ("demo-engine-a", "demo-engine-b", "demo-engine-c")
# An engine that died without releasing: its claims are stranded until reclaimed.
VANISHED_ENGINE = "demo-engine-vanished"


class DemoStepError(Exception):
    """What the demo's failed workflows failed with."""


# Per type: the step it failed in, and why (the failed workflows of the seed show these).
DEMO_FAILURES = {
    "order": ("charge", "card declined by the issuer (demo)"),
    "invoice": ("send", "mail relay refused the connection (demo)"),
    "ledger": ("step-2", "ledger entry conflicts with an entry of another run (demo)"),
}


def _demo_failure(
    workflow_type: str, *, at_ms: int, epoch: int, engine_id: str
) -> dict[str, object]:
    """The record the runtime would have written: raised for real, so it has a traceback,
    after one failed attempt of the same step."""
    step, message = DEMO_FAILURES[workflow_type]
    try:
        raise DemoStepError(message)
    except DemoStepError as error:
        retried = {"step": step, "attempt": 1, **error_summary(error), "at_ms": at_ms - 2_000}
        return failure_record(
            error, step=step, at_ms=at_ms, epoch=epoch, engine_id=engine_id, step_errors=[retried]
        )


def demo_input(workflow_type: str, rng: random.Random) -> dict[str, object]:
    """Inputs that keep demo workflows running long enough to be watched."""
    if workflow_type == "order":
        return {"items": rng.randint(1, 5), "sleep": rng.randint(20, 240)}
    if workflow_type == "ledger":
        return {"steps": rng.randint(2, 5), "step_delay_ms": 200, "sleep": rng.randint(10, 120)}
    return {"lines": [rng.randint(100, 5_000) for _ in range(rng.randint(1, 4))]}


def demo_trickle_start(*, count: int, seed: int | None = None) -> list[str]:
    """Start ``count`` new demo workflows without an engine: the next reclaim pass claims them."""
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


@dataclass
class _DemoFleet:
    """The rows the seed writes, built in memory first so they go in as one transaction."""

    now: int
    ttl: int
    workflows: list[Workflow] = field(default_factory=list)
    claims: list[WorkflowClaim] = field(default_factory=list)
    events: list[ClaimEvent] = field(default_factory=list)
    unindexed: set[str] = field(default_factory=set)
    counts: dict[str, int] = field(
        default_factory=lambda: {"held": 0, "ownerless": 0, "unindexed": 0, "dead": 0}
    )


# A running workflow's fate, by where rng.random() falls: below 0.08 ownerless, below
# 0.14 not indexed (and never claimed), below 0.22 held by the vanished engine, else held
# by one of the crashed demo engines.
OWNERLESS_BELOW, UNINDEXED_BELOW, VANISHED_BELOW = 0.08, 0.14, 0.22


def _held_claim(
    workflow_id: str, epoch: int, engine: str, *, claimed: int, expires: int
) -> WorkflowClaim:
    return WorkflowClaim(
        workflow_id=workflow_id,
        epoch=epoch,
        holder_engine_id=engine,
        holder_epoch=epoch,
        holder_expires_at_ms=expires,
        holder_claimed_at_ms=claimed,
    )


def _running_claim(fleet: _DemoFleet, n: int, workflow: Workflow, epoch: int, fate: float) -> None:
    """The claim (or its absence) of running workflow number ``n``, by its ``fate``."""
    workflow_id, created = workflow.workflow_id, workflow.created_at_ms
    if fate < OWNERLESS_BELOW:
        fleet.counts["ownerless"] += 1
        fleet.claims.append(WorkflowClaim(workflow_id=workflow_id, epoch=epoch))
    elif fate < UNINDEXED_BELOW:
        fleet.counts["unindexed"] += 1
        fleet.unindexed.add(workflow_id)
    elif fate < VANISHED_BELOW:
        fleet.counts["dead"] += 1
        claimed = created + 1_000
        fleet.claims.append(
            _held_claim(
                workflow_id, epoch, VANISHED_ENGINE, claimed=claimed, expires=claimed + fleet.ttl
            )
        )
    else:
        fleet.counts["held"] += 1
        engine = DEMO_ENGINES[n % len(DEMO_ENGINES)]
        fleet.claims.append(
            _held_claim(workflow_id, epoch, engine, claimed=created, expires=fleet.now + fleet.ttl)
        )
        fleet.events.append(
            ClaimEvent(
                workflow_id=workflow_id,
                kind="acquired",
                epoch_before=epoch - 1 or None,
                epoch_after=epoch,
                engine_id=engine,
                at_ms=created,
            )
        )


def _demo_workflow(fleet: _DemoFleet, n: int, rng: random.Random) -> None:
    """Workflow number ``n`` and its claim. The draws from ``rng`` come in a fixed order,
    so a seed always gives the same fleet."""
    workflow_type = DEMO_TYPES[n % len(DEMO_TYPES)]
    workflow_id = f"{workflow_type}-{n:05d}"
    created = fleet.now - rng.randint(60_000, 3_600_000)
    status = rng.choices(
        [WorkflowStatus.RUNNING, WorkflowStatus.COMPLETED, WorkflowStatus.FAILED],
        weights=[6, 3, 1],
    )[0]
    workflow = Workflow(
        workflow_id=workflow_id,
        workflow_type=workflow_type,
        status=status,
        state={"input": demo_input(workflow_type, rng), "steps": {}},
        created_at_ms=created,
        updated_at_ms=created,
    )
    fleet.workflows.append(workflow)
    epoch = rng.randint(1, 4)
    if status != WorkflowStatus.RUNNING:
        if status == WorkflowStatus.FAILED:
            engine_id = DEMO_ENGINES[n % len(DEMO_ENGINES)]
            workflow.failure = _demo_failure(
                workflow_type, at_ms=created, epoch=epoch, engine_id=engine_id
            )
        fleet.claims.append(WorkflowClaim(workflow_id=workflow_id, epoch=epoch))
        return
    _running_claim(fleet, n, workflow, epoch, rng.random())


def _crashed_engines(fleet: _DemoFleet) -> list[Engine]:
    """A fleet that crashed: its live-looking claims lapse and get taken over by the real
    engines within a TTL or so of the start."""
    hostname = socket.gethostname()
    return [
        Engine(
            engine_id=engine_id,
            hostname=hostname,
            pid=0,
            started_at_ms=fleet.now - 3_600_000,
            heartbeat_at_ms=fleet.now - 4 * fleet.ttl,
            status=EngineStatus.DEAD,
            held_count=sum(c.holder_engine_id == engine_id for c in fleet.claims),
            version="demo",
        )
        for engine_id in DEMO_ENGINES
    ]


def _demo_fleet_write(fleet: _DemoFleet) -> None:
    with transaction.atomic():
        Workflow.objects.bulk_create(fleet.workflows)
        for workflow in fleet.workflows:
            if workflow.workflow_id not in fleet.unindexed:
                workflow_index(workflow)
        WorkflowClaim.objects.bulk_create(fleet.claims)
        ClaimEvent.objects.bulk_create(fleet.events)
        Engine.objects.bulk_create(_crashed_engines(fleet))


def demo_fleet_seed(*, clock: Clock, workflows: int = 300, seed: int = 7) -> DemoSeedSummary:
    """Create the demo fleet once; a database that already has workflows is left alone."""
    if Workflow.objects.exists():
        return DemoSeedSummary(Workflow.objects.count(), 0, 0, 0, 0)
    rng = random.Random(seed)
    fleet = _DemoFleet(now=clock(), ttl=claim_timing().ttl_ms)
    for n in range(workflows):
        _demo_workflow(fleet, n, rng)
    _demo_fleet_write(fleet)
    counts = fleet.counts
    return DemoSeedSummary(
        workflows, counts["held"], counts["ownerless"], counts["unindexed"], counts["dead"]
    )
