"""Claims under engine sessions (the engine-lease mode), on both stores: a claim names its
engine's session and lives while the session does; renewing the session renews them all in
one statement; a session's expiry makes every claim of it takeover-eligible at once and no
earlier (docs/design.md §12)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from claims.protocol import (
    ClaimMetrics,
    ClaimRegistry,
    ClaimTiming,
    EngineDeposedError,
    Holder,
    ReclaimTarget,
    SessionLeases,
    rotate_claim,
    run_reclaim_pass,
    run_renew_pass,
)
from claims.protocol.session_lease import EngineSessionLease, close_expired_session
from claims.protocol.sessions import SessionRow
from claims.protocol.states import derive_claim_state
from claims.protocol.testing import FakeClock, MemoryClaimStore

from .stores import GRACE_MS, START_MS, TTL_MS, Arrangement, CountingStore, InterposedStore
from .test_lost_answers import LostAnswers

T0 = START_MS
EXPIRY = T0 + TTL_MS
TAKEABLE = EXPIRY + GRACE_MS + 1
WORKFLOWS = ["wf-1", "wf-2", "wf-3"]

Engine = Callable[..., ClaimRegistry]


@pytest.fixture
def engine(store: Any, clock: FakeClock, timing: ClaimTiming) -> Engine:
    """One engine in the engine-lease mode: a registry holding claims under its session."""

    def make(engine_id: str, *, on: Any = None, **kwargs: Any) -> ClaimRegistry:
        backing = store if on is None else on
        session = EngineSessionLease(backing, engine_id=engine_id, clock=clock, timing=timing)
        kwargs.setdefault("metrics", ClaimMetrics())
        return ClaimRegistry(
            backing,
            engine_id=engine_id,
            clock=clock,
            timing=timing,
            liveness=SessionLeases(session),
            **kwargs,
        )

    return make


def counted(registry: ClaimRegistry) -> ClaimMetrics:
    """The metrics every registry of this suite is built with."""
    assert registry.metrics is not None
    return registry.metrics


def holding(engine: Engine, engine_id: str, workflow_ids: list[str]) -> ClaimRegistry:
    registry = engine(engine_id)
    for workflow_id in workflow_ids:
        assert registry.acquire(workflow_id).status == "acquired"
    return registry


def test_a_claim_names_its_session_and_shows_the_sessions_expiry(
    store: Any, engine: Engine, timing: ClaimTiming
) -> None:
    holding(engine, "engine-a", ["wf-1"])

    row = store.read_claim("wf-1")

    assert row.holder == Holder("engine-a", 1, None, T0, 1)
    assert row.session == SessionRow("engine-a", 1, EXPIRY, T0, T0)
    assert row.expires_at_ms() == EXPIRY
    assert derive_claim_state(row, T0, timing) == "live"


def test_the_renew_pass_is_one_statement_whatever_is_held(
    store: Any, engine: Engine, clock: FakeClock
) -> None:
    counting = CountingStore(store)
    registry = engine("engine-a", on=counting)
    registry.acquire_many([f"wf-{index}" for index in range(50)])
    before = store.read_claims([f"wf-{index}" for index in range(50)])
    counting.calls.clear()
    clock.advance(5_000)

    result = run_renew_pass(registry, registry.metrics)

    assert counting.calls == ["cas_renew_session"]
    assert (result.renewed_count, result.failed_count) == (50, 0)
    after = store.read_claims(list(before))
    assert {wf: row.holder for wf, row in after.items()} == {
        wf: row.holder for wf, row in before.items()
    }
    assert {row.expires_at_ms() for row in after.values()} == {EXPIRY + 5_000}
    assert counted(registry).snapshot()["active_claims"] == 50


def test_session_expiry_makes_every_claim_takeover_eligible_at_once_and_no_earlier(
    store: Any, engine: Engine, clock: FakeClock, arrange: Arrangement
) -> None:
    holding(engine, "engine-a", WORKFLOWS)
    rival = engine("engine-b")
    clock.set(EXPIRY + GRACE_MS)

    early = rival.takeover_many(WORKFLOWS)

    assert {result.status for result in early.values()} == {"not-expired"}
    assert store.read_session("engine-a").closed_at_ms is None
    clock.set(TAKEABLE)

    taken = rival.takeover_many(WORKFLOWS)

    assert {result.status for result in taken.values()} == {"acquired"}
    assert {wf: store.read_claim(wf).holder for wf in WORKFLOWS} == {
        wf: Holder("engine-b", 2, None, TAKEABLE, 1) for wf in WORKFLOWS
    }
    closed = store.read_session("engine-a")
    assert (closed.closed_at_ms, closed.closed_by) == (TAKEABLE, "engine-b")
    assert arrange.events("wf-2")[-1] == ("takeover", 1, 2, "engine-b")
    assert counted(rival).session_counts()["closed-expired"] == 1


def test_a_renewed_session_keeps_every_claim(store: Any, engine: Engine, clock: FakeClock) -> None:
    owner = holding(engine, "engine-a", WORKFLOWS)
    rival = engine("engine-b")
    clock.set(EXPIRY + GRACE_MS)
    run_renew_pass(owner)
    clock.set(TAKEABLE + 1_000)

    results = rival.takeover_many(WORKFLOWS)

    assert {result.status for result in results.values()} == {"not-expired"}
    assert set(owner.held_workflow_ids()) == set(WORKFLOWS)
    assert all(owner.within_deadline(wf) for wf in WORKFLOWS)


def test_a_session_renewed_after_its_claims_were_taken_over_is_told_so(
    store: Any, engine: Engine, clock: FakeClock
) -> None:
    lost: list[str] = []
    paused = holding(engine, "engine-a", [])
    paused._on_claim_lost = lost.append
    for workflow_id in WORKFLOWS:
        paused.acquire(workflow_id)
    clock.set(TAKEABLE)
    engine("engine-b").takeover_many(WORKFLOWS)

    result = run_renew_pass(paused, paused.metrics)

    assert (result.renewed_count, result.failed_count) == (0, 3)
    assert paused.held_workflow_ids() == []
    assert sorted(lost) == WORKFLOWS
    snapshot = counted(paused).snapshot()
    assert (snapshot["attempts"]["deposed"], snapshot["renewal_failures"]) == (3, 3)
    assert snapshot["active_claims"] == 0
    with pytest.raises(EngineDeposedError):
        paused.fenced_write("wf-1", lambda: None)
    assert paused.session is not None
    assert paused.session.epoch == 2  # the next session is open for new grants


@pytest.mark.parametrize(
    "session",
    [
        None,
        SessionRow("engine-a", 1, -1, T0, T0),
        SessionRow("engine-a", 1, 2**53, T0, T0),
        SessionRow("engine-a", 2, EXPIRY, T0, T0),
    ],
    ids=["missing", "negative-expiry", "expiry-past-2^53", "another-epoch"],
)
def test_a_claim_whose_session_is_missing_garbled_or_gone_is_invalid_and_stealable(
    store: Any,
    arrange: Arrangement,
    engine: Engine,
    timing: ClaimTiming,
    session: SessionRow | None,
) -> None:
    arrange.put_row("wf-1", epoch=1, holder=Holder("engine-a", 1, None, T0, 1))
    if session is not None:
        arrange.put_session(session)

    assert derive_claim_state(store.read_claim("wf-1"), T0, timing) == "invalid"
    assert engine("engine-b").takeover("wf-1").status == "acquired"
    assert store.read_claim("wf-1").holder == Holder("engine-b", 2, None, T0, 1)


def test_a_renewal_that_lands_between_the_takeovers_read_and_its_close_keeps_the_claims(
    store: Any, engine: Engine, clock: FakeClock
) -> None:
    owner = holding(engine, "engine-a", WORKFLOWS)
    clock.set(TAKEABLE)
    rival = engine("engine-b", on=InterposedStore(store, "cas_close_session", owner.renew_session))

    results = rival.takeover_many(WORKFLOWS)

    assert {result.status for result in results.values()} == {"not-expired"}
    assert store.read_session("engine-a").closed_at_ms is None
    assert {store.read_claim(wf).holder.engine_id for wf in WORKFLOWS} == {"engine-a"}
    assert run_renew_pass(owner).renewed_count == 3


def test_a_grant_is_refused_while_the_session_it_would_replace_is_open(
    store: Any, engine: Engine, clock: FakeClock
) -> None:
    """The store's own condition, beneath the registry's judgement: a takeover of a session
    holder's claim applies only once that session is closed."""
    holding(engine, "engine-a", ["wf-1"])
    clock.set(TAKEABLE)
    held = store.read_claim("wf-1").holder

    granted = store.cas_grant(
        "wf-1",
        expected_epoch=1,
        expected_holder=held,
        holder=Holder("engine-b", 2, None, TAKEABLE, 1),
        event=None,
    )

    assert not granted
    assert store.read_claim("wf-1").holder == held


def test_closing_the_session_at_shutdown_gives_every_claim_up_in_one_statement(
    store: Any, engine: Engine, clock: FakeClock, timing: ClaimTiming
) -> None:
    counting = CountingStore(store)
    owner = engine("engine-a", on=counting)
    owner.acquire_many(WORKFLOWS)
    counting.calls.clear()

    owner.release_all()

    assert counting.calls == ["cas_close_session"]
    assert owner.held_workflow_ids() == []
    assert {derive_claim_state(store.read_claim(wf), T0, timing) for wf in WORKFLOWS} == {"expired"}
    results = engine("engine-b").takeover_many(WORKFLOWS)
    assert {result.status for result in results.values()} == {"acquired"}


def test_the_local_deadline_of_every_claim_follows_the_session(
    engine: Engine, clock: FakeClock
) -> None:
    owner = holding(engine, "engine-a", WORKFLOWS)
    clock.advance(TTL_MS - 1)
    run_renew_pass(owner)
    clock.advance(TTL_MS - 1)

    assert all(owner.within_deadline(wf) for wf in WORKFLOWS)
    clock.advance(1)
    assert not any(owner.within_deadline(wf) for wf in WORKFLOWS)


def test_stale_holder_discovery_lists_the_claims_of_expired_closed_and_invalid_sessions(
    store: Any, arrange: Arrangement, engine: Engine, clock: FakeClock, timing: ClaimTiming
) -> None:
    holding(engine, "engine-live", ["wf-live"])
    arrange.put_session(SessionRow("engine-old", 1, T0 - TTL_MS - GRACE_MS - 1, T0, T0))
    arrange.put_row("wf-expired", epoch=1, holder=Holder("engine-old", 1, None, T0, 1))
    arrange.put_session(SessionRow("engine-shut", 1, EXPIRY, T0, T0, T0, "engine-shut"))
    arrange.put_row("wf-closed", epoch=1, holder=Holder("engine-shut", 1, None, T0, 1))
    arrange.put_row("wf-invalid", epoch=1, holder=Holder("engine-gone", 1, None, T0, 1))

    stale = store.list_stale_holders(expired_before_ms=T0 - timing.grace_ms)

    assert stale == ["wf-closed", "wf-expired", "wf-invalid"]


# -- claims moved by others while the session lives ---------------------------------------


def test_an_engine_learns_of_claims_others_moved_from_the_claim_events(
    store: Any, engine: Engine, clock: FakeClock
) -> None:
    """A forced release and a cancel move two claims while the session lives; the engine
    drops exactly those, counts each as deposed and as a renewal failure (as the
    per-workflow mode's next renewal would), and keeps the third."""
    lost: list[str] = []
    owner = holding(engine, "engine-a", WORKFLOWS)
    owner._on_claim_lost = lost.append
    clock.advance(1_000)
    rotate_claim(store, "wf-1", clock=clock, kind="forced_release", actor="op")
    rotate_claim(store, "wf-3", clock=clock, kind="rotated")

    dropped = owner.forget_moved_claims()

    assert dropped == 2
    assert owner.held_workflow_ids() == ["wf-2"]
    assert sorted(lost) == ["wf-1", "wf-3"]
    assert counted(owner).snapshot()["attempts"]["deposed"] == 2
    assert counted(owner).snapshot()["renewal_failures"] == 2
    assert owner.forget_moved_claims() == 0  # read again: nothing new is lost twice
    assert counted(owner).snapshot()["renewal_failures"] == 2


def test_an_engine_reads_the_moves_of_its_own_claims_only(
    store: Any, engine: Engine, clock: FakeClock
) -> None:
    """Each move names the engine its row named before: behind a mass failure the dead
    engines' claims move by the thousand, and a live engine's read passes them over. A
    move naming no engine before is everyone's to read."""
    owner = holding(engine, "engine-a", ["wf-1", "wf-2"])
    holding(engine, "engine-b", ["wf-3"])
    rotate_claim(store, "wf-4", clock=clock, kind="forced_release", actor="op")  # unclaimed
    clock.advance(1_000)
    rotate_claim(store, "wf-1", clock=clock, kind="forced_release", actor="op")
    rotate_claim(store, "wf-3", clock=clock, kind="forced_release", actor="op")

    assert sorted(store.read_claim_moves(since_ms=T0, moved_from="engine-a")) == [
        ("wf-1", 2),
        ("wf-4", 1),
    ]
    assert sorted(store.read_claim_moves(since_ms=T0)) == [("wf-1", 2), ("wf-3", 2), ("wf-4", 1)]
    assert owner.forget_moved_claims() == 1
    assert owner.held_workflow_ids() == ["wf-2"]


def test_an_engines_own_grants_are_not_moves_that_lose_it_claims(
    store: Any, engine: Engine, clock: FakeClock
) -> None:
    holding(engine, "engine-a", WORKFLOWS)
    clock.set(TAKEABLE)
    rival = engine("engine-b")
    rival.takeover_many(WORKFLOWS)  # takeover events naming engine-b's own new epochs

    assert rival.forget_moved_claims() == 0
    assert sorted(rival.held_workflow_ids()) == WORKFLOWS


def test_the_reclaim_pass_drops_moved_claims_before_it_looks_for_work(
    store: Any, engine: Engine, clock: FakeClock
) -> None:
    owner = holding(engine, "engine-a", WORKFLOWS)
    rotate_claim(store, "wf-2", clock=clock, kind="forced_release", actor="op")

    run_reclaim_pass(ReclaimTarget(owner, store))

    assert sorted(owner.held_workflow_ids()) == ["wf-1", "wf-3"]


def test_a_forced_takeover_whose_adopt_order_was_lost_is_taken_up_by_the_audit(
    store: Any, engine: Engine, clock: FakeClock, workflows: Any, reclaim_target: Any
) -> None:
    """Under a session nobody renews a claim, so one granted to this engine that it never
    heard of does not lapse: the reclaim pass's audit of the rows naming the engine takes
    it up at its epoch and drives it."""
    workflows.put("wf-1")
    target = engine("engine-b")
    holding(engine, "engine-a", ["wf-1"])  # forced over to engine-b while engine-a lives
    epoch = rotate_claim(
        store,
        "wf-1",
        clock=clock,
        kind="forced_takeover",
        new_holder_engine_id="engine-b",
        new_holder_session_epoch=target.session_epoch(),
        ttl_ms=TTL_MS,
        actor="op",
    )
    driven: list[str] = []

    run_reclaim_pass(reclaim_target(target, on_reclaimed=driven.append))

    assert target.current_epoch("wf-1") == epoch
    assert driven == ["wf-1"]


def test_outside_the_engine_lease_mode_nothing_is_read_for_moves(
    store: Any, registry: Callable[..., ClaimRegistry]
) -> None:
    counting = CountingStore(store)
    per_claim = registry("engine-a", on=counting)
    per_claim.acquire("wf-1")
    counting.calls.clear()

    assert per_claim.forget_moved_claims() == 0
    assert counting.calls == []


# -- grants racing the session's own lifecycle ---------------------------------------------


class SlowSessionReads:
    """Delegates to a store, but every session read takes 50 ms: long enough for every
    racing thread to find no session open before the first one has opened it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def read_session(self, engine_id: str) -> Any:
        time.sleep(0.05)
        return self.inner.read_session(engine_id)


def test_threads_that_all_find_no_session_open_one_between_them(
    clock: FakeClock, timing: ClaimTiming
) -> None:
    """Each grant opens the session if none is open; four at once must not each open one,
    which would end the one before and every claim just granted under it. (The memory
    store: the race is the lease's, whatever the store.)"""
    store = MemoryClaimStore()
    slow = SlowSessionReads(store)
    session = EngineSessionLease(slow, engine_id="engine-a", clock=clock, timing=timing)
    registry = ClaimRegistry(
        slow, engine_id="engine-a", clock=clock, timing=timing, liveness=SessionLeases(session)
    )
    barrier = threading.Barrier(4)

    def grant(workflow_id: str) -> str:
        barrier.wait(timeout=10)
        return registry.acquire(workflow_id).status

    with ThreadPoolExecutor(4) as pool:
        statuses = list(pool.map(grant, ["wf-1", "wf-2", "wf-3", "wf-4"]))

    assert statuses == ["acquired"] * 4
    opened = store.read_session("engine-a")
    assert opened is not None
    assert opened.epoch == 1
    rows = store.read_claims(["wf-1", "wf-2", "wf-3", "wf-4"])
    assert {derive_claim_state(row, T0, timing) for row in rows.values()} == {"live"}
    assert all(registry.within_deadline(wf) for wf in rows)


def test_a_grant_in_doubt_that_landed_under_a_session_lost_since_is_taken_afresh(
    store: Any, engine: Engine, clock: FakeClock
) -> None:
    """The insert committed under session 1 and its answer was lost; session 1 expired and
    was closed; the engine's next session must take the workflow over, not drive it under
    the dead session."""
    broken = LostAnswers(store)
    owner = engine("engine-a", on=broken)
    with broken.breaking("cas_insert"):
        owner.acquire("wf-1")
    clock.set(TAKEABLE)
    engine("engine-b").takeover_many(["wf-other"])  # nothing to take: a pass that reads
    assert close_expired_session(
        store, store.read_session("engine-a"), now_ms=clock(), timing=owner.timing, by="b"
    )
    assert run_renew_pass(owner).failed_count == 0  # the session was lost; nothing cached
    assert owner.session is not None
    assert owner.session.epoch == 2

    result = owner.takeover("wf-1")

    assert (result.status, result.epoch) == ("acquired", 2)
    held = owner.held_claim("wf-1")
    assert held is not None
    assert held.session_epoch == 2
    assert store.read_claim("wf-1").holder == Holder("engine-a", 2, None, TAKEABLE, 2)
    assert owner.within_deadline("wf-1")


def test_a_garbage_holder_naming_a_session_round_trips_through_the_arrangement(
    arrange: Arrangement,
) -> None:
    arrange.put_row("wf-1", epoch=3, holder=Holder("engine-a", 3, None, T0, 7))

    row = arrange.read("wf-1")

    assert row is not None
    assert row.holder == Holder("engine-a", 3, None, T0, 7)
