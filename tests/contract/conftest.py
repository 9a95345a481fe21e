"""One claim-protocol contract suite, run against the in-memory and the ORM store."""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any

import pytest

from claims.protocol import ClaimMetrics, ClaimRegistry, ClaimTiming, ReclaimTarget
from claims.protocol.testing import FakeClock, MemoryClaimStore

from .stores import (
    RENEW_INTERVAL_MS,
    START_MS,
    TTL_MS,
    Arrangement,
    MemoryArrangement,
    OrmArrangement,
    orm_store_class,
)


@pytest.fixture(params=["memory", pytest.param("orm", marks=pytest.mark.django_db)])
def store_kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def store(store_kind: str, request: pytest.FixtureRequest) -> Any:
    if store_kind == "memory":
        return MemoryClaimStore()
    return orm_store_class(request)()


@pytest.fixture
def arrange(store_kind: str, store: Any) -> Arrangement:
    return MemoryArrangement(store) if store_kind == "memory" else OrmArrangement(store)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START_MS)


@pytest.fixture
def timing() -> ClaimTiming:
    return ClaimTiming(ttl_ms=TTL_MS, renew_interval_ms=RENEW_INTERVAL_MS)


@pytest.fixture
def registry(store: Any, clock: FakeClock, timing: ClaimTiming) -> Callable[..., ClaimRegistry]:
    """Build one engine's registry on the shared store and clock.

    ``on=`` puts a wrapper store in front of the shared one; every registry gets
    its own ``ClaimMetrics`` unless one is passed.
    """

    def make(engine_id: str, *, on: Any = None, **kwargs: Any) -> ClaimRegistry:
        kwargs.setdefault("metrics", ClaimMetrics())
        return ClaimRegistry(
            store if on is None else on,
            engine_id=engine_id,
            clock=clock,
            timing=timing,
            **kwargs,
        )

    return make


# -- reclaim and renew passes (workflows, the scan cursor, pending re-drives) -----------


class Workflows(abc.ABC):
    """Arrange and inspect workflows (authoritative record and visibility index), the
    reclaim scan cursor and persisted re-drives, the same way on both stores."""

    def put(
        self,
        workflow_id: str,
        *,
        status: str = "running",
        workflow_type: str = "demo",
        indexed: bool = True,
    ) -> None:
        """Create or overwrite a workflow, with its index entry unless not ``indexed``."""
        self._put(workflow_id, status, workflow_type, indexed)

    def put_many(
        self,
        workflow_ids: list[str],
        *,
        status: str = "running",
        workflow_type: str = "demo",
        indexed: bool = False,
    ) -> None:
        """Create new workflows, without index entries unless ``indexed``."""
        self._put_many(workflow_ids, status, workflow_type, indexed)

    @abc.abstractmethod
    def _put(self, workflow_id: str, status: str, workflow_type: str, indexed: bool) -> None: ...

    def _put_many(
        self, workflow_ids: list[str], status: str, workflow_type: str, indexed: bool
    ) -> None:
        for workflow_id in workflow_ids:
            self._put(workflow_id, status, workflow_type, indexed)

    @abc.abstractmethod
    def set_status(self, workflow_id: str, status: str) -> None:
        """Change the status of a workflow put earlier (and of its index entry, if any)."""

    @abc.abstractmethod
    def cursor(self) -> tuple[str | None, int, int]:
        """(last workflow id read, wraps, rows scanned in total) of the "default" cursor."""

    @abc.abstractmethod
    def pending_redrives(self) -> dict[tuple[str, str], tuple[int, int, str]]:
        """(engine, workflow) -> (epoch, attempts, last error) of every persisted re-drive."""


class MemoryWorkflows(Workflows):
    """Workflows, the scan cursor and pending re-drives of a ``MemoryClaimStore``."""

    def __init__(self, store: MemoryClaimStore) -> None:
        self.store = store
        self._kept: dict[str, tuple[str, bool]] = {}  # id -> (workflow type, indexed)

    def _put(self, workflow_id: str, status: str, workflow_type: str, indexed: bool) -> None:
        self.store.put_workflow(
            workflow_id, status=status, workflow_type=workflow_type, indexed=indexed
        )
        self._kept[workflow_id] = (workflow_type, indexed)

    def set_status(self, workflow_id: str, status: str) -> None:
        workflow_type, indexed = self._kept[workflow_id]
        self._put(workflow_id, status, workflow_type, indexed)

    def cursor(self) -> tuple[str | None, int, int]:
        return self.store.cursor("default")

    def pending_redrives(self) -> dict[tuple[str, str], tuple[int, int, str]]:
        return dict(self.store.pending_redrives)


def _workflow_columns(status: str, workflow_type: str) -> dict[str, Any]:
    """A Workflow row's columns but its id, as the contract arranges them."""
    return {
        "workflow_type": workflow_type,
        "status": status,
        "created_at_ms": START_MS,
        "updated_at_ms": START_MS,
    }


def _visibility_columns(status: str, workflow_type: str) -> dict[str, Any]:
    """A WorkflowVisibility row's columns but its id, as the contract arranges them."""
    return {"status": status, "workflow_type": workflow_type, "updated_at_ms": START_MS}


class OrmWorkflows(Workflows):
    """The same on the ORM: Workflow, WorkflowVisibility, ReclaimCursor, PendingRedrive."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def _put(self, workflow_id: str, status: str, workflow_type: str, indexed: bool) -> None:
        from claims.models import Workflow, WorkflowVisibility

        Workflow.objects.update_or_create(
            workflow_id=workflow_id, defaults=_workflow_columns(status, workflow_type)
        )
        visibility = WorkflowVisibility.objects.filter(workflow_id=workflow_id)
        if indexed:
            WorkflowVisibility.objects.update_or_create(
                workflow_id=workflow_id, defaults=_visibility_columns(status, workflow_type)
            )
        else:
            visibility.delete()

    def _put_many(
        self, workflow_ids: list[str], status: str, workflow_type: str, indexed: bool
    ) -> None:
        """With ``bulk_create`` (fast enough for thousands)."""
        from claims.models import Workflow, WorkflowVisibility

        columns = _workflow_columns(status, workflow_type)
        Workflow.objects.bulk_create(
            Workflow(workflow_id=workflow_id, **columns) for workflow_id in workflow_ids
        )
        if indexed:
            columns = _visibility_columns(status, workflow_type)
            WorkflowVisibility.objects.bulk_create(
                WorkflowVisibility(workflow_id=workflow_id, **columns)
                for workflow_id in workflow_ids
            )

    def set_status(self, workflow_id: str, status: str) -> None:
        from claims.models import Workflow, WorkflowVisibility

        assert Workflow.objects.filter(workflow_id=workflow_id).update(status=status) == 1
        WorkflowVisibility.objects.filter(workflow_id=workflow_id).update(status=status)

    def cursor(self) -> tuple[str | None, int, int]:
        from claims.models import ReclaimCursor

        row = (
            ReclaimCursor.objects.filter(name="default")
            .values_list("last_workflow_id", "wraps", "scanned_total")
            .first()
        )
        return (None, 0, 0) if row is None else (row[0], row[1], row[2])

    def pending_redrives(self) -> dict[tuple[str, str], tuple[int, int, str]]:
        from claims.models import PendingRedrive

        rows = PendingRedrive.objects.values_list(
            "engine_id", "workflow_id", "epoch", "attempts", "last_error"
        )
        return {
            (engine, wf): (epoch, attempts, error) for engine, wf, epoch, attempts, error in rows
        }


@pytest.fixture
def workflows(store_kind: str, store: Any) -> Workflows:
    """The ``Workflows`` of the store under test."""
    return MemoryWorkflows(store) if store_kind == "memory" else OrmWorkflows(store)


@pytest.fixture
def reclaim_target(store: Any) -> Callable[..., ReclaimTarget]:
    """Build a ReclaimTarget for a registry; ``on=`` puts a wrapper store in front.

    The target records into the registry's own ``ClaimMetrics`` unless told otherwise.
    """

    def make(registry: ClaimRegistry, *, on: Any = None, **kwargs: Any) -> ReclaimTarget:
        kwargs.setdefault("metrics", registry.metrics)
        return ReclaimTarget(registry, store if on is None else on, **kwargs)

    return make
