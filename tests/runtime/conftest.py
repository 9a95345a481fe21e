"""An engine here is a ClaimRegistry on the ORM store plus a WorkflowDriver, on one FakeClock."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

import claims.runtime.demo_workflows  # noqa: F401  (registers the demo types)
from claims.models import StepLedger, Workflow, WorkflowClaim
from claims.protocol import ClaimRegistry, ClaimTiming
from claims.protocol.testing import FakeClock
from claims.runtime import WorkflowDriver
from claims.services.workflows import workflow_start
from claims.store import OrmClaimStore

from . import workflows

START_MS = 1_700_000_000_000
TTL_MS = 30_000
RENEW_INTERVAL_MS = 5_000
# Past this much silence a claim is expired for everyone: TTL plus the grace.
EXPIRY_MS = TTL_MS + 2 * RENEW_INTERVAL_MS + 1


@dataclass
class Engine:
    registry: ClaimRegistry
    driver: WorkflowDriver
    disposing: threading.Event

    @property
    def engine_id(self) -> str:
        return self.registry.engine_id

    def drive(self, workflow_id: str) -> str:
        return self.driver.drive(workflow_id)


@pytest.fixture(autouse=True)
def _claim_settings(settings: Any) -> None:
    # workflow_start grants the starting engine a claim of the configured TTL.
    settings.WEFT_CLAIM_TTL = f"{TTL_MS}ms"
    settings.WEFT_CLAIM_RENEW_INTERVAL = f"{RENEW_INTERVAL_MS}ms"


@pytest.fixture(autouse=True)
def _no_leftover_hooks() -> Iterator[None]:
    yield
    workflows.HOOKS.clear()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START_MS)


@pytest.fixture
def engine(db: None, clock: FakeClock) -> Callable[[str], Engine]:
    def make(engine_id: str) -> Engine:
        registry = ClaimRegistry(
            OrmClaimStore(),
            engine_id=engine_id,
            clock=clock,
            timing=ClaimTiming(ttl_ms=TTL_MS, renew_interval_ms=RENEW_INTERVAL_MS),
        )
        disposing = threading.Event()
        driver = WorkflowDriver(registry, clock=clock, disposing=disposing.is_set)
        return Engine(registry, driver, disposing)

    return make


@pytest.fixture
def start(clock: FakeClock) -> Callable[..., str]:
    """Start a workflow claimed by ``engine`` (cached there by adopt) or ownerless."""

    def start_workflow(
        workflow_type: str, input: Any = None, *, engine: Engine | None = None
    ) -> str:
        workflow = workflow_start(
            workflow_type=workflow_type,
            input=input,
            engine_id=None if engine is None else engine.engine_id,
            clock=clock,
        )
        if engine is not None:
            assert engine.registry.adopt(workflow.workflow_id, 1).status == "adopted"
        return workflow.workflow_id

    return start_workflow


def ledger(workflow_id: str) -> dict[str, list[tuple[int, str]]]:
    """Every execution of each step: (epoch, engine) in the order they ran."""
    runs: dict[str, list[tuple[int, str]]] = {}
    for step, epoch, engine_id in (
        StepLedger.objects.filter(workflow_id=workflow_id)
        .order_by("id")
        .values_list("step", "epoch", "engine_id")
    ):
        runs.setdefault(step, []).append((epoch, engine_id))
    return runs


def workflow_row(workflow_id: str) -> Workflow:
    return Workflow.objects.get(workflow_id=workflow_id)


def claim_row(workflow_id: str) -> WorkflowClaim:
    return WorkflowClaim.objects.get(workflow_id=workflow_id)


def recorded_steps(workflow_id: str) -> dict[str, tuple[int, str]]:
    """The checkpointed steps: name -> (epoch, engine) they were recorded under."""
    steps = workflow_row(workflow_id).state.get("steps", {})
    return {name: (record["epoch"], record["engine_id"]) for name, record in steps.items()}


@contextmanager
def registered_local_engine(engine_id: str, clock: FakeClock) -> Iterator[Any]:
    """A LocalEngine whose passes the test runs itself (no threads started), its Engine row
    active, on the test's clock with no offset; its pools shut down after."""
    from claims.engine.local import LocalEngine
    from claims.models import Engine, EngineStatus
    from claims.protocol import OffsetClock

    Engine.objects.create(
        engine_id=engine_id,
        hostname="h",
        pid=1,
        queue=f"engine.{engine_id}",
        started_at_ms=START_MS,
        heartbeat_at_ms=START_MS,
        status=EngineStatus.ACTIVE,
    )
    engine = LocalEngine(
        engine_id=engine_id,
        queue=f"engine.{engine_id}",
        timing=ClaimTiming(ttl_ms=TTL_MS, renew_interval_ms=RENEW_INTERVAL_MS),
        clock=OffsetClock(0, monotonic=clock),
    )
    try:
        yield engine
    finally:
        engine._drives.shutdown()
        engine._reclaim_pool.shutdown(wait=True)
