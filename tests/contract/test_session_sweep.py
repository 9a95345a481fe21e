"""A dead session naming more claims than a chunk is taken over by the session, a chunk a
statement, never listed (docs/design.md §4, "A mass failure is split"). The ORM store
sweeps; the memory store keeps no session index and lists every stale holder instead."""

from __future__ import annotations

from typing import Any

import pytest

from claims.protocol import (
    ClaimMetrics,
    ClaimRegistry,
    ClaimTiming,
    Holder,
    run_reclaim_pass,
)
from claims.protocol.testing import FakeClock

from .stores import Arrangement, CountingStore
from .test_lost_answers import AnswerLost, LostAnswers
from .test_reclaim_budget import slow_drive
from .test_reclaim_pass import InlineExecutor
from .test_session_claims import TAKEABLE, Engine, engine, holding

__all__ = ["engine"]  # the fixture, used by name

CHUNK = 3
DEAD = ("engine-a", 1)
STRANDED = [f"wf-{n}" for n in range(8)]


@pytest.fixture
def orm_only(store_kind: str) -> None:
    if store_kind == "memory":
        pytest.skip("the memory store keeps no session index: it lists every stale holder")


def dead_engine_holding(
    engine: Engine, workflows: Any, clock: FakeClock, ids: list[str] = STRANDED, **kinds: Any
) -> None:
    """engine-a takes ``ids`` under its session 1 and dies: at TAKEABLE they are stale."""
    workflows.put_many(ids, indexed=True, **kinds)
    holding(engine, "engine-a", ids)
    clock.set(TAKEABLE)


def taker(
    engine: Engine, reclaim_target: Any, driven: list[str], *, on: Any = None, **kwargs: Any
) -> tuple[ClaimRegistry, Any]:
    """engine-b and its reclaim target, both on ``on`` (a wrapper store) if given; its
    drives noted in ``driven``, chunks of CHUNK, and a budget no pass spends unless told."""
    registry = engine("engine-b", on=on)
    kwargs.setdefault("on_reclaimed", driven.append)
    kwargs.setdefault("chunk_size", CHUNK)
    kwargs.setdefault("pass_budget_ms", 60_000)
    return registry, reclaim_target(registry, on=on, **kwargs)


def test_the_claims_of_a_dead_session_are_taken_by_the_session_and_never_listed(
    orm_only: None,
    store: Any,
    engine: Engine,
    workflows: Any,
    clock: FakeClock,
    arrange: Arrangement,
    reclaim_target: Any,
) -> None:
    dead_engine_holding(engine, workflows, clock)
    driven: list[str] = []
    b, target = taker(engine, reclaim_target, driven)

    result = run_reclaim_pass(target)

    discovery = target.last_discovery
    assert discovery.swept == {DEAD: len(STRANDED)}
    assert discovery.stale_holders == len(STRANDED)
    assert not set(discovery.candidates) & set(STRANDED)
    assert sorted(driven) == STRANDED
    assert (result.reclaimed_count, result.deferred_count) == (len(STRANDED), 0)
    session_b = b.session_epoch()
    for workflow_id in STRANDED:
        assert store.read_claim(workflow_id).holder == Holder(
            "engine-b", 2, None, TAKEABLE, session_b
        )
        assert b.current_epoch(workflow_id) == 2
        assert arrange.events(workflow_id)[-1] == ("takeover", 1, 2, "engine-b")
    assert store.read_session("engine-a").closed_by == "engine-b"
    # Each move names the dead engine as the holder before: a live engine's read of its
    # own moves passes them over.
    moved_from_dead = store.read_claim_moves(since_ms=0, moved_from="engine-a")
    assert sorted(moved_from_dead) == [(workflow_id, 2) for workflow_id in STRANDED]
    assert not set(store.read_claim_moves(since_ms=0, moved_from="engine-c")) & set(moved_from_dead)
    metrics = b.metrics
    assert isinstance(metrics, ClaimMetrics)
    assert metrics.snapshot()["attempts"]["takeover"] == len(STRANDED)


def test_the_memory_store_lists_them_instead_and_they_are_taken_all_the_same(
    store_kind: str, engine: Engine, workflows: Any, clock: FakeClock, reclaim_target: Any
) -> None:
    if store_kind != "memory":
        pytest.skip("the ORM store sweeps (the test above)")
    dead_engine_holding(engine, workflows, clock)
    driven: list[str] = []
    _, target = taker(engine, reclaim_target, driven)

    run_reclaim_pass(target)

    assert target.last_discovery.swept == {}
    assert sorted(driven) == STRANDED


def test_a_session_at_most_a_chunk_is_listed_as_before(
    orm_only: None, engine: Engine, workflows: Any, clock: FakeClock, reclaim_target: Any
) -> None:
    dead_engine_holding(engine, workflows, clock, STRANDED[:CHUNK])
    driven: list[str] = []
    _, target = taker(engine, reclaim_target, driven)

    run_reclaim_pass(target)

    assert target.last_discovery.swept == {}
    assert sorted(target.last_discovery.candidates) == STRANDED[:CHUNK]
    assert sorted(driven) == STRANDED[:CHUNK]


def test_only_types_this_engine_runs_are_swept(
    orm_only: None,
    store: Any,
    engine: Engine,
    workflows: Any,
    clock: FakeClock,
    reclaim_target: Any,
) -> None:
    workflows.put_many(STRANDED[:4], indexed=True)
    workflows.put_many(STRANDED[4:], indexed=True, workflow_type="elsewhere")
    holding(engine, "engine-a", STRANDED)
    clock.set(TAKEABLE)
    driven: list[str] = []
    _, target = taker(
        engine,
        reclaim_target,
        driven,
        is_type_registered=lambda name: name == "demo",
        registered_types=lambda: ["demo"],
    )

    run_reclaim_pass(target)

    assert target.last_discovery.swept == {DEAD: len(STRANDED)}
    assert sorted(driven) == STRANDED[:4]
    assert {store.read_claim(wf).holder.engine_id for wf in STRANDED[4:]} == {"engine-a"}


def test_a_workflow_no_longer_running_is_taken_and_handed_straight_back(
    orm_only: None,
    store: Any,
    engine: Engine,
    workflows: Any,
    clock: FakeClock,
    arrange: Arrangement,
    reclaim_target: Any,
) -> None:
    dead_engine_holding(engine, workflows, clock)
    workflows.set_status("wf-0", "completed")
    driven: list[str] = []
    b, target = taker(engine, reclaim_target, driven)

    result = run_reclaim_pass(target)

    assert "wf-0" not in driven
    assert dict(result.outcomes)["wf-0"] == "not-eligible"
    assert store.read_claim("wf-0").holder is None
    assert b.current_epoch("wf-0") is None
    assert [event[0] for event in arrange.events("wf-0")][-2:] == ["takeover", "released"]


def test_an_engine_without_the_list_of_its_types_lists_instead(
    orm_only: None, engine: Engine, workflows: Any, clock: FakeClock, reclaim_target: Any
) -> None:
    dead_engine_holding(engine, workflows, clock)
    driven: list[str] = []
    _, target = taker(
        engine, reclaim_target, driven, is_type_registered=lambda name: name == "demo"
    )

    run_reclaim_pass(target)

    assert target.last_discovery.swept == {}
    assert sorted(driven) == STRANDED


def test_outside_the_engine_lease_mode_a_dead_session_is_listed(
    orm_only: None,
    store: Any,
    engine: Engine,
    workflows: Any,
    clock: FakeClock,
    timing: ClaimTiming,
    reclaim_target: Any,
) -> None:
    """An engine with no session of its own cannot name one in a grant: it takes a dead
    session's claims id by id, as before."""
    dead_engine_holding(engine, workflows, clock)
    plain = ClaimRegistry(store, engine_id="engine-b", clock=clock, timing=timing)
    driven: list[str] = []
    target = reclaim_target(
        plain, on_reclaimed=driven.append, chunk_size=CHUNK, pass_budget_ms=60_000
    )

    run_reclaim_pass(target)

    assert target.last_discovery.swept == {}
    assert sorted(driven) == STRANDED


def test_the_budget_stops_the_sweep_and_a_catch_up_pass_goes_on_without_discovery(
    orm_only: None,
    store: Any,
    engine: Engine,
    workflows: Any,
    clock: FakeClock,
    reclaim_target: Any,
) -> None:
    dead_engine_holding(engine, workflows, clock)
    driven: list[str] = []
    counted = CountingStore(store)
    _, target = taker(
        engine,
        reclaim_target,
        driven,
        on=counted,
        on_reclaimed=slow_drive(clock, driven),
        pass_budget_ms=10,
    )

    first = run_reclaim_pass(target)

    assert len(driven) == CHUNK  # the first chunk whatever the budget, then no more
    assert first.deferred_count == len(STRANDED) - CHUNK
    assert target.carried == len(STRANDED) - CHUNK
    counted.calls.clear()

    catch_up = run_reclaim_pass(target, catch_up=True)

    assert "find_stale_holders" not in counted.calls
    assert len(driven) == 2 * CHUNK
    assert catch_up.reclaimed_count == CHUNK
    while target.carried:
        run_reclaim_pass(target, catch_up=True)
    assert sorted(driven) == STRANDED


def test_a_sweep_whose_answer_was_lost_is_taken_up_by_the_next_audit(
    orm_only: None,
    store: Any,
    engine: Engine,
    workflows: Any,
    clock: FakeClock,
    reclaim_target: Any,
) -> None:
    """What if the takeover committed and its answer was lost? The rows name this engine's
    open session, which no other engine may take over; the ids are unknown, so the next
    pass audits the rows naming the engine at once (not an audit interval later), takes
    each back at its epoch and drives it."""
    dead_engine_holding(engine, workflows, clock)
    broken = LostAnswers(store)
    driven: list[str] = []
    b, target = taker(engine, reclaim_target, driven, on=broken)
    broken.lose.add("take_over_session_claims")

    run_reclaim_pass(target)

    assert driven == []
    assert b.audit_due
    taken = [wf for wf in STRANDED if store.read_claim(wf).holder.engine_id == "engine-b"]
    assert len(taken) == CHUNK  # committed, though engine-b never heard of them
    assert all(b.current_epoch(wf) is None for wf in taken)

    # At the same instant: only the lost answer makes it audit. Inline: the test's
    # transaction is this thread's alone.
    run_reclaim_pass(target, executor=InlineExecutor())

    assert sorted(driven) == STRANDED
    assert all(b.current_epoch(wf) == 2 for wf in STRANDED)
    assert not b.audit_due


def test_a_session_renewed_before_it_was_closed_keeps_its_claims(
    orm_only: None, store: Any, engine: Engine, workflows: Any, clock: FakeClock
) -> None:
    """A late renewal of an expired session nobody closed still applies: the sweep closes
    a session only when the rule says it is expired, and takes nothing from a live one."""
    dead_engine_holding(engine, workflows, clock)
    a = store.read_session("engine-a")
    assert store.cas_renew_session(
        "engine-a",
        epoch=a.epoch,
        expected_expires_at_ms=a.expires_at_ms,
        expires_at_ms=TAKEABLE + 30_000,
        renewed_at_ms=TAKEABLE,
    )
    b = engine("engine-b")

    assert b.take_over_session(DEAD, limit=CHUNK, workflow_types=None) == {}
    assert {store.read_claim(wf).holder.engine_id for wf in STRANDED} == {"engine-a"}


def test_a_lost_answer_raises_to_the_caller(
    orm_only: None, store: Any, engine: Engine, workflows: Any, clock: FakeClock
) -> None:
    dead_engine_holding(engine, workflows, clock)
    broken = LostAnswers(store)
    b = engine("engine-b", on=broken)
    broken.lose.add("take_over_session_claims")

    with pytest.raises(AnswerLost):
        b.take_over_session(DEAD, limit=CHUNK, workflow_types=None)

    assert b.audit_due
    assert b.held_workflow_ids() == []


class _StartAt:
    """An rng whose every random place is ``place``."""

    def __init__(self, place: int) -> None:
        self.place = place

    def randrange(self, stop: int) -> int:
        return self.place % stop


def test_the_dead_sessions_are_swept_from_a_random_one(
    orm_only: None,
    store: Any,
    engine: Engine,
    workflows: Any,
    clock: FakeClock,
    reclaim_target: Any,
) -> None:
    """When several engines died, the live ones start on different sessions, so fewer of
    them skip each other's locked rows in the same one."""
    workflows.put_many(STRANDED, indexed=True)
    holding(engine, "engine-a", STRANDED[:4])
    holding(engine, "engine-c", STRANDED[4:])
    clock.set(TAKEABLE)
    driven: list[str] = []
    _, target = taker(
        engine,
        reclaim_target,
        driven,
        on_reclaimed=slow_drive(clock, driven),
        pass_budget_ms=10,
        rng=_StartAt(1),
    )

    run_reclaim_pass(target)

    assert list(target.last_discovery.swept) == [("engine-c", 1), DEAD]
    assert len(driven) == CHUNK
    assert set(driven) <= set(STRANDED[4:])


def test_a_claim_cooling_down_here_is_not_swept(
    orm_only: None,
    store: Any,
    engine: Engine,
    workflows: Any,
    clock: FakeClock,
    reclaim_target: Any,
) -> None:
    """A claim this engine lost less than an interval ago is not taken back by it (the
    cool-down every takeover keeps): the statement skips it."""
    dead_engine_holding(engine, workflows, clock)
    driven: list[str] = []
    b, target = taker(engine, reclaim_target, driven)
    b._cooldown_from_ms.update({"wf-0": clock(), "wf-5": clock()})  # as a lost claim leaves

    run_reclaim_pass(target)

    assert sorted(driven) == sorted(set(STRANDED) - {"wf-0", "wf-5"})
    assert {store.read_claim(wf).holder.engine_id for wf in ("wf-0", "wf-5")} == {"engine-a"}


def test_an_engine_never_sweeps_its_own_session(
    orm_only: None,
    store: Any,
    engine: Engine,
    workflows: Any,
    clock: FakeClock,
    arrange: Arrangement,
    reclaim_target: Any,
) -> None:
    """Its session was closed by another engine (it stopped renewing past TTL and grace)
    and its reclaim pass runs before its renewal learns so: the claims it still holds under
    that session are listed, not swept (a sweep would write each back naming the same
    closed session and pick it again, an epoch a time), and left to the other engines."""
    workflows.put_many(STRANDED, indexed=True)
    a = holding(engine, "engine-a", STRANDED)
    clock.set(TAKEABLE)
    assert engine("engine-c").takeover_many(["wf-0"])["wf-0"].status == "acquired"
    assert store.read_session("engine-a").closed_by == "engine-c"
    driven: list[str] = []
    target = reclaim_target(a, on_reclaimed=driven.append, chunk_size=CHUNK)

    run_reclaim_pass(target)

    assert target.last_discovery.swept == {}
    assert driven == []
    assert [store.read_claim(wf).epoch for wf in STRANDED[1:]] == [1] * (len(STRANDED) - 1)
    assert all(
        event[3] != "engine-a" for event in arrange.all_events()[1:] if event[1] == "takeover"
    )
    assert a.take_over_session(DEAD, limit=CHUNK, workflow_types=None) == {}


def test_an_audit_due_whose_read_failed_is_due_again(
    orm_only: None,
    store: Any,
    engine: Engine,
    workflows: Any,
    clock: FakeClock,
    reclaim_target: Any,
) -> None:
    dead_engine_holding(engine, workflows, clock)
    broken = LostAnswers(store)
    driven: list[str] = []
    b, target = taker(engine, reclaim_target, driven, on=broken)
    broken.lose.add("take_over_session_claims")
    run_reclaim_pass(target)
    broken.fail.add("list_granted_to")

    assert run_reclaim_pass(target).status == "discovery-failed"
    assert b.audit_due

    run_reclaim_pass(target, executor=InlineExecutor())

    assert sorted(driven) == STRANDED
