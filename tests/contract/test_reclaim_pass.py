"""run_reclaim_pass(target): discover, attempt each candidate, report outcomes
(docs/design.md §4)."""

from __future__ import annotations

import gc
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from typing import Any

import pytest

from claims.protocol import (
    ClaimMetrics,
    ClaimRegistry,
    Holder,
    ReclaimPassResult,
    ReclaimTarget,
    run_reclaim_pass,
)

from .stores import GRACE_MS, START_MS, TTL_MS, FailingStore, orm_store_class

T0 = START_MS
EXPIRY = T0 + TTL_MS
LAPSED = Holder("b", 1, T0 - GRACE_MS - 1, T0 - GRACE_MS - 1 - TTL_MS)


class InlineExecutor(Executor):
    """Runs every task at once on the calling thread.

    The ORM variants need it: pytest-django's test transaction is visible only to
    the test's own connection, and a pool thread would open another.
    """

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            future.set_exception(exc)
        return future


class RaisingDiscoveryStore:
    """Delegates to a real store, but the first reclaim source raises."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def list_stale_holders(self, **kwargs: Any) -> list[str]:
        raise RuntimeError("database unavailable")

    def find_stale_holders(self, **kwargs: Any) -> Any:
        raise RuntimeError("database unavailable")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def arrange_mixed_candidates(arrange, workflows) -> None:
    """Five candidates, one per source path, with ids sorted against the source order."""
    arrange.put_row("z-stale", epoch=1, holder=LAPSED)  # source 1: taken over
    workflows.put("z-stale", workflow_type="order")
    workflows.put("y-invoice", workflow_type="invoice", indexed=True)  # source 2: not my type
    workflows.put("x-indexed", workflow_type="order", indexed=True)  # source 2: acquired
    workflows.put("b-scanned", workflow_type="order", indexed=False)  # source 3: acquired
    workflows.put("a-raises", workflow_type="order", indexed=False)  # source 3: drive raises


def test_pass_reports_outcomes_in_candidate_order_and_counts_reclaimed(
    registry, arrange, workflows, reclaim_target
):
    """Outcomes are (id, status) in candidate order; a raising drive is "error", stops nothing."""
    arrange_mixed_candidates(arrange, workflows)
    driven: list[str] = []

    def drive(workflow_id):
        driven.append(workflow_id)
        if workflow_id == "a-raises":
            raise RuntimeError("runtime down")

    a = registry("a")
    target = reclaim_target(a, on_reclaimed=drive, is_type_registered=lambda t: t == "order")
    discovered: list[str] = []
    discover = target.list_candidates

    def list_candidates() -> list[str]:
        discovered.extend(discover())
        return list(discovered)

    target.list_candidates = list_candidates

    result = run_reclaim_pass(target, executor=InlineExecutor())

    assert [workflow_id for workflow_id, _ in result.outcomes] == discovered
    # The scan's page (which also reads the indexed ones) first, then the shared window.
    assert set(discovered[:4]) == {"a-raises", "b-scanned", "x-indexed", "y-invoice"}
    assert discovered[4] == "z-stale"
    assert dict(result.outcomes) == {
        "z-stale": "reclaimed",
        "y-invoice": "not-eligible",
        "x-indexed": "reclaimed",
        "a-raises": "error",
        "b-scanned": "reclaimed",
    }
    assert (result.status, result.reclaimed_count) == ("completed", 3)
    assert sorted(driven) == ["a-raises", "b-scanned", "x-indexed", "z-stale"]
    assert target.pending_redrives == {"a-raises": 1}
    assert sorted(a.held_workflow_ids()) == ["a-raises", "b-scanned", "x-indexed", "z-stale"]
    assert a.metrics.snapshot()["attempts"]["takeover"] == 1
    assert a.metrics.snapshot()["attempts"]["acquired"] == 3


def test_attempt_raising_a_store_error_is_recorded_as_error_and_others_go_on(
    registry, store, arrange, workflows, reclaim_target
):
    """An attempt whose store call raises is "error"; the candidates after it are still tried."""
    workflows.put("a-first", indexed=True)
    workflows.put("b-broken", indexed=True)
    workflows.put("c-last", indexed=True)
    broken = FailingStore(store, "read_claim", {"b-broken"})
    a = registry("a", on=broken)
    target = reclaim_target(a, on=broken)

    result = run_reclaim_pass(target, executor=InlineExecutor())

    assert result.status == "completed"
    assert sorted(result.outcomes) == [
        ("a-first", "reclaimed"),
        ("b-broken", "error"),
        ("c-last", "reclaimed"),
    ]
    assert result.reclaimed_count == 2
    assert arrange.read("b-broken") is None


def test_second_pass_redrives_the_failed_drive_and_reclaims_nothing_new(
    registry, arrange, workflows, reclaim_target
):
    """The next pass carries the pending re-drive alone and, when the drive works, clears it."""
    arrange_mixed_candidates(arrange, workflows)
    failing = {"a-raises"}

    def drive(workflow_id):
        if workflow_id in failing:
            raise RuntimeError("runtime down")

    a = registry("a")
    target = reclaim_target(a, on_reclaimed=drive, is_type_registered=lambda t: t == "order")
    run_reclaim_pass(target, executor=InlineExecutor())
    failing.clear()

    result = run_reclaim_pass(target, executor=InlineExecutor())

    assert result == ReclaimPassResult(
        "completed", [("y-invoice", "not-eligible"), ("a-raises", "reclaimed")], 1
    )
    assert target.pending_redrives == {}
    assert workflows.pending_redrives() == {}


def test_pass_reports_discovery_failed_when_discovery_raises(
    registry, store, arrange, workflows, reclaim_target
):
    """When discovery raises the pass is "discovery-failed", with no attempt and no outcome."""
    arrange.put_row("z-stale", epoch=1, holder=LAPSED)
    workflows.put("x-indexed", indexed=True)
    broken = RaisingDiscoveryStore(store)
    driven: list[str] = []
    a = registry("a", on=broken)

    result = run_reclaim_pass(
        reclaim_target(a, on=broken, on_reclaimed=driven.append), executor=InlineExecutor()
    )

    assert result == ReclaimPassResult("discovery-failed", [], 0)
    assert driven == []
    assert a.held_workflow_ids() == []


def test_pass_of_a_disposing_target_is_empty(registry, arrange, workflows, reclaim_target):
    """A disposing target's pass completes with no candidate and no outcome."""
    arrange.put_row("z-stale", epoch=1, holder=LAPSED)
    workflows.put("x-indexed", indexed=True)
    target = reclaim_target(registry("a"))
    target.mark_disposing()

    assert run_reclaim_pass(target, executor=InlineExecutor()) == ReclaimPassResult(
        "completed", [], 0
    )


def test_pass_with_a_single_candidate_runs_without_an_executor(
    registry, arrange, workflows, reclaim_target
):
    """With the default executor a single candidate is attempted and reported."""
    workflows.put("x-indexed", indexed=True)
    a = registry("a")

    result = run_reclaim_pass(reclaim_target(a))

    assert result == ReclaimPassResult("completed", [("x-indexed", "reclaimed")], 1)
    assert a.current_epoch("x-indexed") == 1


# -- the default pool of 16, on a store whose rows every thread can see ---------------------


def _memory_setup():
    from claims.protocol.testing import MemoryClaimStore

    store = MemoryClaimStore()
    return store, store.put_workflow, store.put_row


def _orm_setup(request):
    from claims.models import Workflow, WorkflowClaim

    store = orm_store_class(request)()

    def put_workflow(workflow_id: str, *, indexed: bool = False, **_: Any) -> None:
        Workflow.objects.create(
            workflow_id=workflow_id,
            workflow_type="demo",
            status="running",
            created_at_ms=T0,
            updated_at_ms=T0,
        )

    def put_row(workflow_id: str, *, epoch: int, holder: Holder) -> None:
        WorkflowClaim.objects.create(
            workflow_id=workflow_id,
            epoch=epoch,
            holder_engine_id=holder.engine_id,
            holder_epoch=holder.epoch,
            holder_expires_at_ms=holder.expires_at_ms,
            holder_claimed_at_ms=holder.claimed_at_ms,
        )

    return store, put_workflow, put_row


def open_thread_connections() -> list[Any]:
    """Django connection wrappers, other than this thread's, whose connection is still open."""
    from django.db import connections
    from django.db.backends.base.base import BaseDatabaseWrapper

    mine = connections["default"]
    # type(), not isinstance(): isinstance() asks a lazy object (a spent request's CSP
    # nonce, say) for its __class__, which evaluates it.
    return [
        wrapper
        for wrapper in gc.get_objects()
        if issubclass(type(wrapper), BaseDatabaseWrapper)
        and wrapper is not mine
        and wrapper.connection is not None
    ]


@pytest.fixture
def close_leaked_connections() -> Iterator[None]:
    """Close the connections pool threads left open, so no ResourceWarning lands on a later test."""
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        for wrapper in open_thread_connections():
            wrapper.connection.close()
            wrapper.connection = None
        gc.collect()


@pytest.mark.parametrize("kind", ["memory", "orm"])
def test_pass_attempts_forty_candidates_on_the_default_pool(
    request, transactional_db, close_leaked_connections, clock, timing, kind
):
    """The default pool attempts every candidate and keeps the outcomes in candidate order."""
    if kind == "memory":
        store, put_workflow, put_row = _memory_setup()
    else:
        store, put_workflow, put_row = _orm_setup(request)
    stale = [f"s-{i:02d}" for i in range(20)]
    scanned = [f"a-{i:02d}" for i in range(20)]
    for workflow_id in stale:
        put_workflow(workflow_id, indexed=False)
        put_row(workflow_id, epoch=1, holder=LAPSED)
    for workflow_id in scanned:
        put_workflow(workflow_id, indexed=False)
    metrics = ClaimMetrics()
    registry = ClaimRegistry(store, engine_id="a", clock=clock, timing=timing, metrics=metrics)
    driven: list[str] = []
    target = ReclaimTarget(registry, store, metrics=metrics, on_reclaimed=driven.append)

    result = run_reclaim_pass(target)

    assert result.status == "completed"
    assert [wf for wf, _ in result.outcomes] == [*scanned, *stale]
    assert {status for _, status in result.outcomes} == {"reclaimed"}
    assert result.reclaimed_count == 40
    assert sorted(driven) == sorted([*stale, *scanned])
    assert metrics.snapshot()["attempts"]["takeover"] == 20
    assert metrics.snapshot()["attempts"]["acquired"] == 20


def test_default_pool_leaves_no_database_connection_open(
    request, transactional_db, close_leaked_connections, clock, timing
):
    """A pass on the default pool closes the database connections its threads opened."""
    store, put_workflow, _ = _orm_setup(request)
    for i in range(20):
        put_workflow(f"a-{i:02d}")
    registry = ClaimRegistry(
        store, engine_id="a", clock=clock, timing=timing, metrics=ClaimMetrics()
    )
    before = len(open_thread_connections())

    result = run_reclaim_pass(ReclaimTarget(registry, store, metrics=registry.metrics))

    assert result.reclaimed_count == 20
    leaked = len(open_thread_connections()) - before
    assert leaked == 0, f"{leaked} connections of finished pool threads are still open"
