"""Random operation sequences: both stores agree step by step, and the invariants hold.

Three engines (a, b, c) and three workflow ids share one fake clock. Each example
runs one sequence of acquire / takeover / renew / release / rotate_claim / adopt /
clock advances against a memory store and, when available, the ORM store, with
fresh registries on each side.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from claims.protocol import (
    ClaimMetrics,
    ClaimRegistry,
    ClaimResult,
    ClaimTiming,
    EngineDeposedError,
    StaleEpochError,
    rotate_claim,
)
from claims.protocol.testing import FakeClock, MemoryClaimStore

from .stores import (
    RENEW_INTERVAL_MS,
    START_MS,
    TTL_MS,
    MemoryArrangement,
    OrmArrangement,
    clear_orm_claim_tables,
    orm_store_class,
)

ENGINES = ("a", "b", "c")
WORKFLOWS = ("wf1", "wf2", "wf3")
GRANT_KINDS = {"acquired", "takeover", "rotated", "forced_takeover"}

engines = st.sampled_from(ENGINES)
workflows = st.sampled_from(WORKFLOWS)
operation = st.one_of(
    st.tuples(st.just("acquire"), engines, workflows),
    st.tuples(st.just("takeover"), engines, workflows),
    # Engine None renews or releases as an engine caching the id, so those calls often matter.
    st.tuples(st.just("renew"), st.none() | engines, workflows),
    st.tuples(
        st.just("release"),
        st.none() | engines,
        workflows,
        st.sampled_from([None, "cached", "other"]),
    ),
    st.tuples(
        st.just("rotate"),
        workflows,
        st.sampled_from([None, "current", "stale"]),
        st.none() | engines,
    ),
    # Engine None adopts as the engine the row names, so operator grants do get adopted.
    st.tuples(
        st.just("adopt"), st.none() | engines, workflows, st.sampled_from(["current", "off by one"])
    ),
    st.tuples(
        st.just("advance"),
        # The grace boundary (expires + 10 s) and the cooldown edge (5 s) are hit on purpose.
        st.sampled_from([0, 1, 4_999, 5_000, 9_999, 10_000, 10_001, 30_000, 40_000])
        | st.integers(0, 40_000),
    ),
)
operations = st.lists(operation, min_size=20, max_size=60)


class Side:
    """One store with a registry per engine, all on the shared clock."""

    def __init__(self, store: Any, clock: FakeClock) -> None:
        timing = ClaimTiming(ttl_ms=TTL_MS, renew_interval_ms=RENEW_INTERVAL_MS)
        self.store = store
        self.clock = clock
        self.lost: dict[str, list[str]] = {engine: [] for engine in ENGINES}
        self.registries = {
            engine: ClaimRegistry(
                store,
                engine_id=engine,
                clock=clock,
                timing=timing,
                metrics=ClaimMetrics(),
                on_claim_lost=self.lost[engine].append,
            )
            for engine in ENGINES
        }

    def apply(self, op: tuple[Any, ...]) -> object:
        """Run one operation; returns its ClaimResult, or a tuple describing a rotation."""
        kind = op[0]
        if kind in ("acquire", "takeover", "renew"):
            _, engine, workflow_id = op
            return getattr(self.registries[engine or self.caching(workflow_id)], kind)(workflow_id)
        if kind == "release":
            _, engine, workflow_id, expected = op
            registry = self.registries[engine or self.caching(workflow_id)]
            cached = registry.current_epoch(workflow_id)
            expected_epoch = {None: None, "cached": cached, "other": (cached or 0) + 1}[expected]
            return registry.release(workflow_id, expected_epoch=expected_epoch)
        if kind == "rotate":
            _, workflow_id, expected, new_holder = op
            row = self.store.read_claim(workflow_id)
            current = None if row is None else row.epoch
            expected_epoch = {None: None, "current": current, "stale": (current or 0) + 7}[expected]
            try:
                epoch = rotate_claim(
                    self.store,
                    workflow_id,
                    clock=self.clock,
                    kind="rotated" if new_holder is None else "forced_takeover",
                    expected_epoch=expected_epoch,
                    new_holder_engine_id=new_holder,
                    ttl_ms=TTL_MS if new_holder else 0,
                )
            except StaleEpochError as error:
                return ("stale", error.expected_epoch, error.current_epoch)
            return ("rotated", epoch)
        if kind == "adopt":
            _, engine, workflow_id, which = op
            row = self.store.read_claim(workflow_id)
            epoch = 1 if row is None else row.epoch
            if engine is None:
                named = None if row is None or row.holder is None else row.holder.engine_id
                engine = named if named in self.registries else "a"
            return self.registries[engine].adopt(
                workflow_id, epoch if which == "current" else epoch + 1
            )
        raise AssertionError(f"unknown operation {op!r}")

    def caching(self, workflow_id: str) -> str:
        """The first engine whose registry caches the id (stale or not), else engine a."""
        for engine, registry in self.registries.items():
            if registry.held_claim(workflow_id) is not None:
                return engine
        return "a"

    def rows(self) -> dict[str, Any]:
        return {workflow_id: self.store.read_claim(workflow_id) for workflow_id in WORKFLOWS}

    def observable(self) -> tuple[Any, ...]:
        """Everything outside the store that must match across stores."""
        return (
            {e: r.held_workflow_ids() for e, r in self.registries.items()},
            {e: [r.held_claim(wf) for wf in WORKFLOWS] for e, r in self.registries.items()},
            {e: r.metrics.snapshot() for e, r in self.registries.items()},  # type: ignore[union-attr]
            {e: list(calls) for e, calls in self.lost.items()},
        )


def check_invariants(
    side: Side,
    op: tuple[Any, ...],
    outcome: object,
    rows_before: dict[str, Any],
    events_before: list[tuple[Any, ...]],
    events_after: list[tuple[Any, ...]],
) -> None:
    """The protocol's invariants, judged after one step of a sequence."""
    rows_after = side.rows()
    touched = op[2] if op[0] in ("acquire", "takeover", "renew", "release", "adopt") else op[1]
    new_events = events_after[len(events_before) :]

    assert events_after[: len(events_before)] == events_before, "the event log was rewritten"
    assert len(new_events) <= 1, f"{op} wrote {new_events}"
    for workflow_id in WORKFLOWS:
        before, after = rows_before[workflow_id], rows_after[workflow_id]
        if workflow_id != touched:
            assert after == before, f"{op} changed {workflow_id}"
            continue
        if before is not None:
            assert after is not None, "a claim row was deleted"
        old_epoch = 0 if before is None else before.epoch
        new_epoch = 0 if after is None else after.epoch
        assert new_epoch in (old_epoch, old_epoch + 1), f"epoch {old_epoch} -> {new_epoch}"
        if new_epoch == old_epoch + 1:
            assert len(new_events) == 1, f"grant to {new_epoch} logged {new_events}"
            _wf, kind, epoch_before, epoch_after, _engine = new_events[0]
            assert kind in GRANT_KINDS
            assert (epoch_before, epoch_after) == (before and before.epoch, new_epoch)
        for _wf, kind, epoch_before, epoch_after, _engine in new_events:
            if kind in GRANT_KINDS:
                assert epoch_after == (epoch_before or 0) + 1
            if kind == "released":
                assert epoch_before == epoch_after == old_epoch

    if isinstance(outcome, ClaimResult):
        before = rows_before[outcome.workflow_id]
        after = rows_after[outcome.workflow_id]
        event(f"{op[0]} -> {outcome.status}")
        if outcome.status == "acquired":
            assert outcome.epoch == (0 if before is None else before.epoch) + 1
            assert after.holder.engine_id == op[1]
            assert after.epoch == outcome.epoch
        elif outcome.status in ("renewed", "released"):
            assert after.epoch == before.epoch
        else:
            assert after == before, f"{op} answered {outcome.status} but changed the row"
    else:
        event(f"{op[0]} -> {outcome[0]}")  # type: ignore[index]

    for workflow_id in WORKFLOWS:
        row = rows_after[workflow_id]
        owners = []
        for engine, registry in side.registries.items():
            cached = registry.held_claim(workflow_id)
            if cached is None:
                continue
            assert row is not None, f"{engine} caches {workflow_id}, which has no row"
            assert cached.engine_id == engine
            assert cached.epoch <= row.epoch, f"{engine} caches a future epoch"
            if cached.epoch == row.epoch:
                assert row.holder == cached, f"{engine} caches {cached}, the row holds {row}"
                owners.append(engine)
        assert len(owners) <= 1, f"{workflow_id} is owned by {owners}"
        writers = [
            engine
            for engine, registry in side.registries.items()
            if _fenced_write_succeeds(registry, workflow_id)
        ]
        assert writers == owners, f"{workflow_id}: fenced writers {writers}, owners {owners}"


def _fenced_write_succeeds(registry: ClaimRegistry, workflow_id: str) -> bool:
    try:
        return registry.fenced_write(workflow_id, lambda: True)
    except EngineDeposedError:
        return False


def run_sequence(ops: list[tuple[Any, ...]], orm_store: Any = None) -> None:
    """Run ``ops`` on a memory side (checking invariants) and, if given, a second store in lockstep.

    The second store is the ORM store in the suite; any store with the contract will do.
    """
    clock = FakeClock(START_MS)
    memory = Side(MemoryClaimStore(), clock)
    memory_log = MemoryArrangement(memory.store)
    orm = None if orm_store is None else Side(orm_store, clock)
    orm_log = None
    if orm_store is not None:
        orm_log = (
            MemoryArrangement(orm_store)
            if isinstance(orm_store, MemoryClaimStore)
            else OrmArrangement(orm_store)
        )

    for step, op in enumerate(ops):
        if op[0] == "advance":
            clock.advance(op[1])
            continue
        rows_before, events_before = memory.rows(), memory_log.all_events()
        outcome = memory.apply(op)
        check_invariants(memory, op, outcome, rows_before, events_before, memory_log.all_events())
        if orm is not None:
            assert orm.apply(op) == outcome, f"step {step}: {op}"

    if orm is not None:
        assert orm_log is not None
        assert orm.rows() == memory.rows()
        assert orm_log.all_events() == memory_log.all_events()
        assert orm.observable() == memory.observable()


@pytest.fixture
def fresh_orm_store(request: pytest.FixtureRequest) -> Any:
    """A factory of empty ORM stores: the db fixture's transaction spans every example."""
    store_class = orm_store_class(request)

    def make() -> Any:
        clear_orm_claim_tables()
        return store_class()

    return make


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(ops=operations)
def test_memory_and_orm_stores_agree_step_by_step(fresh_orm_store, ops):
    """The same operations give identical results, rows, events and caches on both stores."""
    run_sequence(ops, orm_store=fresh_orm_store())


@settings(max_examples=300, deadline=None)
@given(ops=operations)
def test_memory_store_keeps_the_protocol_invariants(ops):
    """Epochs only grow by one per grant, and at most one engine can write each workflow."""
    run_sequence(ops)
