"""The deterministic world: one in-memory store, engines with their own clocks, operators.

Every store call an activity makes goes through ``World.store_call``, which pauses the
activity before the call (the checker decides who goes next) and applies the fault the
checker chose for it. The world also keeps what the invariants need beyond the rows: the
highest epoch written under each workflow's fence and by whom, and the highest epoch each
engine has believed it held.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from claims.protocol import ClaimMetrics, ClaimRegistry, ClaimTiming, ReclaimTarget, SessionLeases
from claims.protocol.session_lease import EngineSessionLease
from claims.protocol.testing import FakeClock, MemoryClaimStore

from .activities import Activity, ConnectionLost, Fault, Pending
from .clocks import SkewedClock

START_MS = 1_000_000
WRITES = frozenset(
    {
        "cas_insert",
        "cas_grant",
        "cas_rotate",
        "cas_renew",
        "cas_release",
        "fenced_write",
        "renew_many",
        "grant_many",
        "insert_many",
        "save_pending_redrive",
        "drop_pending_redrive",
        "cas_open_session",
        "cas_renew_session",
        "cas_close_session",
        "take_over_session_claims",
        "insert_ownership_mode",
        "record_event",
        "scan_unheld_running",
    }
)

# Reads that only suggest: candidates and moves, each judged again by a read of the row
# and a compare-and-swap before anything is written on their word. No schedule is lost by
# making them without a pause: a stale answer here is one a pause would also have given,
# and what it delays, the liveness check's continuation waits for.
HINTS = frozenset(
    {
        "find_stale_holders",
        "list_stale_holders",
        "list_unheld_running_indexed",
        "scan_unheld_running",
        "list_held_by",
        "list_granted_to",
        "read_claim_moves",
    }
)


@dataclass(frozen=True)
class Config:
    """A configuration to explore: who, what, and how much can go wrong."""

    mode: str = "workflow-lease"  # or "engine-lease"
    engines: tuple[str, ...] = ("a", "b")
    workflows: tuple[str, ...] = ("wf1",)
    skews_ms: tuple[int, ...] = ()  # per engine, in order; missing ones are 0
    ttl_ms: int = 3_000
    interval_ms: int = 1_000
    max_faults: int = 1  # store calls that fail or lose their answer, per schedule
    max_crashes: int = 1
    max_lapses: int = 2  # clock jumps past a TTL and the grace
    max_ticks: int = 3  # clock moves of one renew interval
    # Switches away from an activity in flight (CHESS's preemption bound): schedules with
    # more are not explored. Bugs of this kind need few: a race is one or two.
    max_preemptions: int = 2
    operators: bool = True
    # Pause before reads too, not only writes: every interleaving of single calls, at a far
    # larger state space (a run by hand). By default another actor may go first only
    # before a write, so an activity's reads since its last write are seen together:
    # what a pause between two reads would add is a view torn by a write between them.
    every_read: bool = False

    @property
    def timing(self) -> ClaimTiming:
        return ClaimTiming(ttl_ms=self.ttl_ms, renew_interval_ms=self.interval_ms)

    def skew(self, engine_id: str) -> int:
        index = self.engines.index(engine_id)
        return self.skews_ms[index] if index < len(self.skews_ms) else 0


class GatedStore:
    """The in-memory store as the protocol sees it: every call passes the world's gate."""

    def __init__(self, inner: MemoryClaimStore, world: World) -> None:
        self.inner = inner
        self.world = world

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or "inner" not in self.__dict__:
            raise AttributeError(name)
        attribute = getattr(self.inner, name)
        if name.startswith("_") or not callable(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            return self.world.store_call(name, attribute, args, kwargs)

        return call


class Engine:
    """One incarnation of an engine: its memory is gone when it crashes, its rows stay."""

    def __init__(self, world: World, engine_id: str, incarnation: int) -> None:
        config = world.config
        self.engine_id = engine_id
        self.incarnation = incarnation
        self.clock = SkewedClock(world.clock, config.skew(engine_id))
        self.metrics = ClaimMetrics()
        self.lost: list[str] = []
        liveness = None
        if config.mode == "engine-lease":
            lease = EngineSessionLease(
                world.store, engine_id=engine_id, clock=self.clock, timing=config.timing
            )
            liveness = SessionLeases(lease)
        self.registry = ClaimRegistry(
            world.store,
            engine_id=engine_id,
            clock=self.clock,
            timing=config.timing,
            metrics=self.metrics,
            on_claim_lost=self.lost.append,
            liveness=liveness,
        )
        self.target = ReclaimTarget(
            self.registry, world.store, metrics=self.metrics, rng=random.Random(0)
        )
        # Grant events by this engine before this incarnation began (the counters' base).
        self.events_before = len(world.inner.events)


@dataclass
class History:
    """What the invariants need beyond the rows, kept as small as they need it."""

    # workflow -> (highest epoch a fenced write was accepted at, the engine that wrote it)
    written: dict[str, tuple[int, str]] = field(default_factory=dict)
    # (engine, workflow) -> highest epoch the engine has cached for it
    believed: dict[tuple[str, str], int] = field(default_factory=dict)
    row_epochs: dict[str, int] = field(default_factory=dict)
    session_epochs: dict[str, int] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)


class World:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.clock = FakeClock(START_MS)
        # An operator's grant to an engine never carries the very millisecond of the
        # engine's own (on a real server two statements do not): were the two equal, a
        # settling read could not tell them apart, which no real clock makes happen.
        self.operator_clock = SkewedClock(self.clock, 1)
        self.inner = MemoryClaimStore()
        self.store = GatedStore(self.inner, self)
        for workflow_id in config.workflows:
            self.inner.put_workflow(workflow_id)
        self.engines: dict[str, Engine | None] = {}
        self.incarnations: dict[str, int] = {}
        for engine_id in config.engines:
            self.incarnations[engine_id] = 1
            self.engines[engine_id] = Engine(self, engine_id, 1)
        self.history = History()
        self.faults = 0
        self.crashes = 0
        self.lapses = 0
        self.ticks = 0
        self.preemptions = 0
        self.last_actor: str | None = None  # who took the last step
        self.running: Activity | None = None  # the activity whose greenlet runs now
        self.invalid = False

    # -- the gate ------------------------------------------------------------------

    def store_call(self, name: str, method: Any, args: tuple[Any, ...], kwargs: Any) -> Any:
        fault: Fault = None
        activity = self.running
        if activity is not None and self._pauses_before(name):
            fault = activity.pause(Pending(name, args, kwargs))
        if fault == "lost" and name not in WRITES:
            self.invalid = True  # a read has no answer to lose: the same as "fail"
            raise NotAWrite(name)
        if fault == "fail":
            raise ConnectionLost(f"{name}: failed before it committed")
        result = method(*args, **kwargs)
        if fault == "lost":
            raise ConnectionLost(f"{name}: committed, answer lost")
        if activity is not None:
            activity.calls.append(f"{name}->{_short(result)}")
        return result

    def _pauses_before(self, name: str) -> bool:
        """Every write is a point where others may go first. Reads are too with
        ``Config.every_read``; by default a read runs at once after the activity's previous
        call (hints always do)."""
        if name in HINTS:
            return False
        return name in WRITES or self.config.every_read

    # -- fenced writes -------------------------------------------------------------

    def record_write(self, engine_id: str, workflow_id: str) -> str:
        """Run under the store's fence: the write a drive makes at the row's epoch."""
        row = self.inner.read_claim(workflow_id)
        assert row is not None, "a fenced write was accepted with no claim row"
        epoch = row.epoch
        before = self.history.written.get(workflow_id)
        if before is not None:
            top, writer = before
            if epoch < top:
                self.violate(
                    f"write at an older epoch accepted: {engine_id} wrote {workflow_id} at "
                    f"epoch {epoch} after {writer} wrote it at {top}"
                )
            elif epoch == top and writer != engine_id:
                self.violate(
                    f"two engines wrote under one epoch: {writer} and {engine_id} both wrote "
                    f"{workflow_id} at epoch {epoch}"
                )
        if before is None or epoch >= before[0]:
            self.history.written[workflow_id] = (epoch, engine_id)
        return f"wrote at epoch {epoch}"

    def violate(self, message: str) -> None:
        self.history.violations.append(message)


class NotAWrite(Exception):
    """A fault was chosen for a call that writes nothing: the schedule is not explored."""


def _short(result: Any) -> str:
    text = repr(result)
    return text if len(text) <= 60 else text[:57] + "..."
