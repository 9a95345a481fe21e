"""Both claim stores behind one small arrangement interface, for the contract suite.

Tests arrange raw rows (garbage holders included) and read the event log through
these helpers, so one test body runs unchanged against the memory and ORM stores.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import pytest

from claims.protocol import ClaimRow, Holder
from claims.protocol.sessions import SessionRow
from claims.protocol.testing import MemoryClaimStore

# The contract suite's shared clock start and timing (30 s TTL, 5 s renew interval).
START_MS = 1_000_000
TTL_MS = 30_000
RENEW_INTERVAL_MS = 5_000
GRACE_MS = 2 * RENEW_INTERVAL_MS
# A foreign holder that expired (past its grace) before the suite's clock start.
LAPSED = Holder("b", 1, START_MS - GRACE_MS - 1, START_MS - GRACE_MS - 1 - TTL_MS)


def strand(arrange: Any, workflows: Any, count: int) -> list[str]:
    """``count`` running indexed workflows ("s-00", ...) whose holder lapsed: stale holders,
    the shared source every engine sees alike."""
    ids = [f"s-{i:02d}" for i in range(count)]
    for workflow_id in ids:
        arrange.put_row(workflow_id, epoch=1, holder=LAPSED)
    workflows.put_many(ids, indexed=True)
    return ids


# (kind, epoch_before, epoch_after, engine_id): the part of an event both stores must agree on.
EventTuple = tuple[str, int | None, int | None, str | None]


def orm_store_class(request: pytest.FixtureRequest) -> Any:
    """``OrmClaimStore`` with pytest-django's test database. A plain import: an import
    error must fail the ORM half of the contract suite, never skip it."""
    from claims.store import OrmClaimStore

    request.getfixturevalue("db")
    return OrmClaimStore


class Arrangement(Protocol):
    store: Any

    def put_row(self, workflow_id: str, *, epoch: int, holder: Holder | None) -> None: ...

    def read(self, workflow_id: str) -> ClaimRow | None: ...

    def events(self, workflow_id: str) -> list[EventTuple]: ...

    def all_events(self) -> list[tuple[str, str, int | None, int | None, str | None]]: ...

    def put_marker(self, mode: str, established_at_ms: int | None) -> None: ...

    def put_session(self, row: SessionRow) -> None: ...


class MemoryArrangement:
    def __init__(self, store: MemoryClaimStore) -> None:
        self.store = store

    def put_row(self, workflow_id: str, *, epoch: int, holder: Holder | None) -> None:
        self.store.put_row(workflow_id, epoch=epoch, holder=holder)

    def read(self, workflow_id: str) -> ClaimRow | None:
        return self.store.read_claim(workflow_id)

    def events(self, workflow_id: str) -> list[EventTuple]:
        return [
            (e.kind, e.epoch_before, e.epoch_after, e.engine_id)
            for e in self.store.events
            if e.workflow_id == workflow_id
        ]

    def all_events(self) -> list[tuple[str, str, int | None, int | None, str | None]]:
        return [
            (e.workflow_id, e.kind, e.epoch_before, e.epoch_after, e.engine_id)
            for e in self.store.events
        ]

    def put_marker(self, mode: str, established_at_ms: int | None) -> None:
        self.store._mode = (mode, established_at_ms)

    def put_session(self, row: SessionRow) -> None:
        self.store.put_session(row)


class OrmArrangement:
    def __init__(self, store: Any) -> None:
        self.store = store

    def put_row(self, workflow_id: str, *, epoch: int, holder: Holder | None) -> None:
        from claims.models import WorkflowClaim

        values = holder or Holder(None, None, None, None)
        WorkflowClaim.objects.update_or_create(
            workflow_id=workflow_id,
            defaults={
                "epoch": epoch,
                "holder_engine_id": values.engine_id,
                "holder_epoch": values.epoch,
                "holder_expires_at_ms": values.expires_at_ms,
                "holder_claimed_at_ms": values.claimed_at_ms,
                "holder_session_epoch": values.session_epoch,
            },
        )

    def read(self, workflow_id: str) -> ClaimRow | None:
        return self.store.read_claim(workflow_id)

    def events(self, workflow_id: str) -> list[EventTuple]:
        from claims.models import ClaimEvent

        rows = (
            ClaimEvent.objects.filter(workflow_id=workflow_id)
            .order_by("id")
            .values_list("kind", "epoch_before", "epoch_after", "engine_id")
        )
        return [tuple(row) for row in rows]  # type: ignore[misc]

    def all_events(self) -> list[tuple[str, str, int | None, int | None, str | None]]:
        from claims.models import ClaimEvent

        rows = ClaimEvent.objects.order_by("id").values_list(
            "workflow_id", "kind", "epoch_before", "epoch_after", "engine_id"
        )
        return [tuple(row) for row in rows]  # type: ignore[misc]

    def put_marker(self, mode: str, established_at_ms: int | None) -> None:
        from claims.models import OwnershipModeMarker

        OwnershipModeMarker.objects.create(mode=mode, established_at_ms=established_at_ms)

    def put_session(self, row: SessionRow) -> None:
        """Write the row as-is, garbled times included (the model checks only the epoch)."""
        from claims.models import EngineSession

        EngineSession.objects.update_or_create(
            engine_id=row.engine_id,
            defaults={
                "epoch": row.epoch,
                "expires_at_ms": row.expires_at_ms,
                "renewed_at_ms": row.renewed_at_ms,
                "started_at_ms": row.started_at_ms,
                "closed_at_ms": row.closed_at_ms,
                "closed_by": row.closed_by,
            },
        )


def clear_orm_claim_tables() -> None:
    """Empty the claim tables inside the test transaction.

    ``WorkflowClaim`` refuses deletion through the ORM (rows are kept for life), so
    this goes around it with plain SQL; only tests may ever do this.
    """
    from django.db import connection

    from claims.models import ClaimEvent, OwnershipModeMarker, WorkflowClaim

    with connection.cursor() as cursor:
        for model in (WorkflowClaim, ClaimEvent, OwnershipModeMarker):
            cursor.execute(f"DELETE FROM {connection.ops.quote_name(model._meta.db_table)}")


class CountingStore:
    """Delegates every call to a real store and records the name of each method called."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return attr(*args, **kwargs)

        return counted


class InterposedStore:
    """Delegates to a real store, running ``hook`` once just before the first call of ``method``.

    The hook stands for a competitor (another engine, an operator) acting between
    this registry's read and its compare-and-swap.
    """

    def __init__(self, inner: Any, method: str, hook: Callable[[], object]) -> None:
        self.inner = inner
        self._method = method
        self._hook: Callable[[], object] | None = hook

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name != self._method or not callable(attr):
            return attr

        def interposed(*args: Any, **kwargs: Any) -> Any:
            hook, self._hook = self._hook, None
            if hook is not None:
                hook()
            return attr(*args, **kwargs)

        return interposed


class FailingStore:
    """Delegates to a real store, but ``method`` raises for the ids in ``failing``."""

    def __init__(self, inner: Any, method: str, failing: set[str]) -> None:
        self.inner = inner
        self._method = method
        self._failing = failing

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name == self._method + "s":
            # The set-based twin (read_claims for read_claim): a store error fails the
            # whole statement when any of its ids is failing.
            def maybe_fail_many(workflow_ids: Any, *args: Any, **kwargs: Any) -> Any:
                if self._failing & set(workflow_ids):
                    raise RuntimeError(f"store unavailable for {sorted(workflow_ids)}")
                return attr(workflow_ids, *args, **kwargs)

            return maybe_fail_many
        if name != self._method:
            return attr

        def maybe_fail(workflow_id: str, *args: Any, **kwargs: Any) -> Any:
            if workflow_id in self._failing:
                raise RuntimeError(f"store unavailable for {workflow_id}")
            return attr(workflow_id, *args, **kwargs)

        return maybe_fail
