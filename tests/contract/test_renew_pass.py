"""run_renew_pass(registry, metrics) and the set-based renew_all under it (docs/design.md §4)."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

import pytest

from claims.protocol import (
    ClaimMetrics,
    ClaimRegistry,
    ClaimRow,
    Holder,
    RenewPassResult,
    run_renew_pass,
)
from claims.protocol.testing import MemoryClaimStore

from .stores import GRACE_MS, RENEW_INTERVAL_MS, START_MS, TTL_MS, orm_store_class

T0 = START_MS
EXPIRY = T0 + TTL_MS


class RaisingRenewStore:
    """Delegates to a real store, but every set-based renewal raises."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def renew_many(self, *args: Any, **kwargs: Any) -> set[str]:
        raise RuntimeError("database unavailable")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_renew_pass_follows_grant_order_and_moves_every_expiry(registry, arrange, clock):
    """Outcomes follow held_workflow_ids() (grant order); each claim expires at now + TTL."""
    a = registry("a")
    for workflow_id in ("wf-c", "wf-a", "wf-b"):
        assert a.acquire(workflow_id).status == "acquired"
    now = clock.advance(RENEW_INTERVAL_MS)

    result = run_renew_pass(a, a.metrics)

    assert result == RenewPassResult(
        [("wf-c", "renewed"), ("wf-a", "renewed"), ("wf-b", "renewed")], 3, 0
    )
    assert a.held_workflow_ids() == ["wf-c", "wf-a", "wf-b"]
    for workflow_id in ("wf-a", "wf-b", "wf-c"):
        assert arrange.read(workflow_id) == ClaimRow(
            workflow_id, 1, Holder("a", 1, now + TTL_MS, T0)
        )
    assert a.metrics.snapshot()["active_claims"] == 3
    assert a.metrics.snapshot()["renewal_failures"] == 0


def test_renew_pass_with_nothing_held_is_empty_and_sets_the_gauge_to_zero(registry):
    """With no claim the pass reports nothing and sets the active-claims gauge to 0."""
    a = registry("a")
    a.metrics.set_active_claims(7)

    assert run_renew_pass(a, a.metrics) == RenewPassResult([], 0, 0)
    assert a.metrics.snapshot()["active_claims"] == 0


def test_foreign_takeover_fails_that_claim_only_and_deposes_it(registry, arrange, clock):
    """A claim taken over by another engine is "failed" and lost; the others still renew."""
    lost: list[str] = []
    a = registry("a", on_claim_lost=lost.append)
    for workflow_id in ("wf-x", "wf-y", "wf-z"):
        a.acquire(workflow_id)
    clock.set(EXPIRY + GRACE_MS + 1)  # a stalled past its grace ...
    assert registry("b").takeover("wf-y").status == "acquired"  # ... and b took wf-y
    now = clock()

    result = run_renew_pass(a, a.metrics)

    assert result == RenewPassResult(
        [("wf-x", "renewed"), ("wf-y", "failed"), ("wf-z", "renewed")], 2, 1
    )
    assert lost == ["wf-y"]
    assert a.held_workflow_ids() == ["wf-x", "wf-z"]
    assert a.current_epoch("wf-y") is None
    snapshot = a.metrics.snapshot()
    assert snapshot["attempts"]["deposed"] == 1
    assert snapshot["renewal_failures"] == 1
    assert snapshot["active_claims"] == 2
    assert a.takeover("wf-y").status == "backoff-skipped"  # the cooldown started
    assert arrange.read("wf-y").holder == Holder("b", 2, now + TTL_MS, now)
    assert arrange.read("wf-x").holder == Holder("a", 1, now + TTL_MS, T0)
    assert ("deposed", 1, None, "a") in arrange.events("wf-y")


def test_renewal_failures_count_every_lost_claim(registry, arrange, clock):
    """renewal_failures grows by one per lost claim, and lost claims are not renewed again."""
    a = registry("a")
    for workflow_id in ("wf-1", "wf-2", "wf-3", "wf-4"):
        a.acquire(workflow_id)
    clock.set(EXPIRY + GRACE_MS + 1)
    b = registry("b")
    for workflow_id in ("wf-2", "wf-4"):
        assert b.takeover(workflow_id).status == "acquired"

    first = run_renew_pass(a, a.metrics)
    second = run_renew_pass(a, a.metrics)

    assert first.outcomes == [
        ("wf-1", "renewed"),
        ("wf-2", "failed"),
        ("wf-3", "renewed"),
        ("wf-4", "failed"),
    ]
    assert (first.renewed_count, first.failed_count) == (2, 2)
    assert second == RenewPassResult([("wf-1", "renewed"), ("wf-3", "renewed")], 2, 0)
    snapshot = a.metrics.snapshot()
    assert snapshot["renewal_failures"] == 2
    assert snapshot["attempts"]["deposed"] == 2
    assert snapshot["active_claims"] == 2


def test_store_error_fails_every_claim_but_keeps_them_held(registry, store, arrange, clock):
    """A store error fails (and counts) every claim of the pass but deposes none of them."""
    failing = RaisingRenewStore(store)
    a = registry("a", on=failing)
    for workflow_id in ("wf-1", "wf-2"):
        a.acquire(workflow_id)
    clock.advance(RENEW_INTERVAL_MS)

    result = run_renew_pass(a, a.metrics)

    assert result == RenewPassResult([("wf-1", "failed"), ("wf-2", "failed")], 0, 2)
    assert a.held_workflow_ids() == ["wf-1", "wf-2"]
    snapshot = a.metrics.snapshot()
    assert snapshot["renewal_failures"] == 2
    assert snapshot["attempts"]["deposed"] == 0
    assert snapshot["active_claims"] == 2
    assert arrange.read("wf-1").holder == Holder("a", 1, EXPIRY, T0)


def test_renew_pass_without_metrics_still_renews(registry, arrange, clock):
    """The metrics argument is optional: without it the pass renews just the same."""
    a = registry("a")
    a.acquire("wf")
    now = clock.advance(RENEW_INTERVAL_MS)

    assert run_renew_pass(a) == RenewPassResult([("wf", "renewed")], 1, 0)
    assert arrange.read("wf").holder == Holder("a", 1, now + TTL_MS, T0)


ROW_CHANGES = {
    "engine id": (1, Holder("b", 1, EXPIRY, T0)),
    "expires at": (1, Holder("a", 1, EXPIRY + 1, T0)),
    "claimed at": (1, Holder("a", 1, EXPIRY, T0 - 1)),
    "holder epoch": (1, Holder("a", 2, EXPIRY, T0)),
    "epoch column": (2, Holder("a", 1, EXPIRY, T0)),
    "holder cleared": (1, None),
}


@pytest.mark.parametrize(("epoch", "holder"), ROW_CHANGES.values(), ids=ROW_CHANGES.keys())
def test_renew_pass_loses_a_claim_whose_row_changed_in_any_column(
    registry, arrange, clock, epoch, holder
):
    """The set-based renewal compares the epoch and the holder columns of every claim (the
    four a per-claim holder sets are changed here; the session epoch in test_renew_all.py)."""
    a = registry("a")
    for workflow_id in ("wf-1", "wf-2"):
        a.acquire(workflow_id)
    arrange.put_row("wf-1", epoch=epoch, holder=holder)
    now = clock.advance(RENEW_INTERVAL_MS)

    result = run_renew_pass(a, a.metrics)

    assert result == RenewPassResult([("wf-1", "failed"), ("wf-2", "renewed")], 1, 1)
    assert arrange.read("wf-1") == ClaimRow("wf-1", epoch, holder)
    assert arrange.read("wf-2").holder == Holder("a", 1, now + TTL_MS, T0)
    assert a.held_workflow_ids() == ["wf-2"]


# -- statement count on the ORM store -----------------------------------------------------------


class PrefetchedReads:
    """Serves read_claim from rows read in one query and keeps events in memory.

    Lets a registry adopt thousands of claims through its public ``adopt`` in a
    fraction of a second; every statement of the renew pass still goes to ``inner``.
    """

    def __init__(self, inner: Any, rows: dict[str, ClaimRow]) -> None:
        self.inner = inner
        self._rows = rows
        self.events: list[Any] = []

    def read_claim(self, workflow_id: str) -> ClaimRow | None:
        return self._rows.get(workflow_id)

    def record_event(self, event: Any) -> None:
        self.events.append(event)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.mark.parametrize(("held", "chunk_size"), [(12_000, None), (6_000, 2_000)])
def test_renew_pass_issues_one_statement_per_chunk(
    request, db, clock, timing, django_assert_max_num_queries, held, chunk_size
):
    """Renewing N held claims takes at most ceil(N / chunk) + 1 statements, and renews all N."""
    from claims.models import WorkflowClaim
    from claims.store import claim_row_from_values
    from tests.factories import bulk_held_claims, claim_values

    store = orm_store_class(request)()
    ids = [f"wf-{i:05d}" for i in range(held)]
    bulk_held_claims(ids, engine="a", expires_at_ms=EXPIRY, claimed_at_ms=T0)
    rows = {values[0]: claim_row_from_values(*values) for values in claim_values()}
    a = ClaimRegistry(
        PrefetchedReads(store, rows),
        engine_id="a",
        clock=clock,
        timing=timing,
        metrics=ClaimMetrics(),
    )
    for workflow_id in ids:
        assert a.adopt(workflow_id, 1).status == "adopted"
    now = clock.advance(RENEW_INTERVAL_MS)
    chunk = 5_000 if chunk_size is None else chunk_size

    with django_assert_max_num_queries(math.ceil(held / chunk) + 1):
        if chunk_size is None:
            result = run_renew_pass(a, a.metrics)
            renewed = result.renewed_count
        else:
            renewed = sum(
                r is not None and r.status == "renewed" for _, r in a.renew_all(chunk_size=chunk)
            )

    assert renewed == held
    assert WorkflowClaim.objects.filter(holder_expires_at_ms=now + TTL_MS).count() == held
    assert a.held_claim(ids[-1]) == Holder("a", 1, now + TTL_MS, T0)


# -- renew_all and a single renew in flight (memory store, real threads) -----------------------


class GatedRenewStore:
    """A memory store whose ``gated`` renewal method waits at a gate; every renewal is recorded."""

    def __init__(self, inner: MemoryClaimStore, gated: str = "cas_renew") -> None:
        self.inner = inner
        self.gated = gated
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.cas_renew_calls = 0
        self.renew_many_ids: list[list[str]] = []

    def _pass_gate(self, method: str) -> None:
        if method == self.gated:
            self.entered.set()
            assert self.gate.wait(10), "the test never opened the gate"

    def cas_renew(self, workflow_id: str, **kwargs: Any) -> bool:
        self.cas_renew_calls += 1
        self._pass_gate("cas_renew")
        return self.inner.cas_renew(workflow_id, **kwargs)

    def renew_many(self, held: Any, **kwargs: Any) -> set[str]:
        self.renew_many_ids.append([workflow_id for workflow_id, _ in held])
        self._pass_gate("renew_many")
        return self.inner.renew_many(held, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def overlap(self, first: Callable[[], Any], second: Callable[[], Any]) -> bool:
        """Run ``first`` in a thread until it waits at the gate, then ``second`` beside it;
        open the gate and let both finish. True if ``second`` was still waiting then."""
        first_thread = threading.Thread(target=first)
        first_thread.start()
        assert self.entered.wait(10)
        second_thread = threading.Thread(target=second)
        second_thread.start()
        second_thread.join(0.2)
        still_waiting = second_thread.is_alive()
        self.gate.set()
        first_thread.join(10)
        second_thread.join(10)
        return still_waiting


def test_renew_all_shares_a_single_renewal_already_in_flight(clock, timing):
    """renew_all waits for an in-flight renew of the same id and returns that very result."""
    store = GatedRenewStore(MemoryClaimStore())
    a = ClaimRegistry(store, engine_id="a", clock=clock, timing=timing, metrics=ClaimMetrics())
    for workflow_id in ("wf-1", "wf-2", "wf-3"):
        a.acquire(workflow_id)
    clock.advance(RENEW_INTERVAL_MS)
    single: dict[str, Any] = {}
    everything: dict[str, Any] = {}
    still_waiting = store.overlap(
        lambda: single.update(result=a.renew("wf-2")),
        lambda: everything.update(results=a.renew_all()),
    )

    assert still_waiting, "renew_all must wait for the renewal in flight"
    assert store.cas_renew_calls == 1
    assert store.renew_many_ids == [["wf-1", "wf-3"]]
    results = everything["results"]
    assert [workflow_id for workflow_id, _ in results] == ["wf-1", "wf-2", "wf-3"]
    assert results[1][1] is single["result"]
    assert single["result"].status == "renewed"
    assert {r.status for _, r in results} == {"renewed"}


def test_renew_pass_reports_a_shared_renewal_like_its_own(clock, timing):
    """A renew pass that joins an in-flight renewal reports that claim renewed, in grant order."""
    store = GatedRenewStore(MemoryClaimStore())
    metrics = ClaimMetrics()
    a = ClaimRegistry(store, engine_id="a", clock=clock, timing=timing, metrics=metrics)
    for workflow_id in ("wf-1", "wf-2"):
        a.acquire(workflow_id)
    passed: dict[str, RenewPassResult] = {}
    store.overlap(lambda: a.renew("wf-1"), lambda: passed.update(result=run_renew_pass(a, metrics)))

    assert passed["result"] == RenewPassResult([("wf-1", "renewed"), ("wf-2", "renewed")], 2, 0)
    assert store.cas_renew_calls == 1
    assert metrics.snapshot()["active_claims"] == 2


def test_single_renew_shares_the_renew_all_already_in_flight(clock, timing):
    """A renew of an id that renew_all is renewing waits for it and returns the same result."""
    store = GatedRenewStore(MemoryClaimStore(), gated="renew_many")
    a = ClaimRegistry(store, engine_id="a", clock=clock, timing=timing, metrics=ClaimMetrics())
    for workflow_id in ("wf-1", "wf-2"):
        a.acquire(workflow_id)
    everything: dict[str, Any] = {}
    single: dict[str, Any] = {}
    still_waiting = store.overlap(
        lambda: everything.update(results=a.renew_all()),
        lambda: single.update(result=a.renew("wf-2")),
    )

    assert still_waiting, "renew must wait for the renew_all in flight"
    assert store.cas_renew_calls == 0
    assert store.renew_many_ids == [["wf-1", "wf-2"]]
    assert single["result"] is dict(everything["results"])["wf-2"]
    assert single["result"].status == "renewed"
