"""Engines of the fleet-discovery benchmark, several to a process, as workers run them.

Each engine is the product's own ``LocalEngine`` (its pass threads, its reclaim pool, its
heartbeat), started on the claims the seed gave it: its session is opened (epoch 1, the
one the seeded claims name) and its registry's cache holds its claims before its first
pass, as an engine that had granted them would. The process ticks its engines together
at the instants the parent chose, as beat fans its ticks out, and times every statement
its threads send, by the pass that sent it, while the measured window is open.

``legacy`` runs discovery and wake as they were before this work: the anti-join over every
running workflow, the OR over every held claim, the park of every held workflow by id, a
scan page per engine per pass and a full audit each time; so both are measured the same
way on the same seed.

Spawned before Django is set up: nothing here imports Django at module level.
"""

from __future__ import annotations

import os
import queue
import re
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

ENGINES_PER_PROCESS = 5


def normalized(sql: str) -> str:
    """A statement's text with its values, casts and list lengths taken out, so the text an
    engine sent and the one pg_stat_statements keeps compare equal."""
    sql = re.sub(r"'(?:[^']|'')*'", "?", sql)
    sql = re.sub(r"%s|\$\d+", "?", sql)
    sql = re.sub(r"::[a-z_ ]+(\[\])?", "", sql)
    sql = re.sub(r"\b\d+\b", "?", sql)
    sql = re.sub(r"\?(\s*,\s*\?)+", "?", sql)
    return re.sub(r"\s+", " ", sql).strip()


@dataclass
class Plan:
    url: str
    engine_ids: list[str]
    interval_ms: int
    warmup_ticks: int
    measured_ticks: int
    legacy: bool
    # Each tick carries beat's share of its reads for the fleet, read by a process of its
    # own at the tick's instant as fan_out_ticks reads it (``run_beat``).
    beat: bool = False


@dataclass
class StatementTimes:
    """Statement time by the pass that sent it, while the window is open."""

    open: bool = False
    only: str = ""  # every statement to this category (beat's process)
    ms: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    count: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    # Per statement text (normalized), how often each pass sent it: the parent splits the
    # database's own time for that text between the passes by it.
    texts: dict[str, dict[str, int]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(int))
    )
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _local: threading.local = field(default_factory=threading.local)

    @contextmanager
    def heartbeat(self) -> Iterator[None]:
        """Statements of the heartbeat that follows a pass count apart from the pass."""
        self._local.heartbeat = True
        try:
            yield
        finally:
            self._local.heartbeat = False

    def category(self) -> str:
        if self.only:
            return self.only
        name = threading.current_thread().name
        if getattr(self._local, "heartbeat", False):
            return "heartbeat"
        if name.startswith("pass-"):
            return name.removeprefix("pass-")
        if name.startswith("reclaim"):
            return "reclaim"  # the pass's attempt pool
        return "other"

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            if self.open:
                elapsed = (time.perf_counter() - started) * 1000
                category = self.category()
                text = normalized(sql)
                with self._lock:
                    self.ms[category] += elapsed
                    self.count[category] += 1
                    self.texts[text][category] += 1


def _install(times: StatementTimes) -> None:
    from django.db.backends.signals import connection_created

    def on_connection(sender: Any, connection: Any, **kwargs: Any) -> None:
        if times not in connection.execute_wrappers:
            connection.execute_wrappers.append(times)

    connection_created.connect(on_connection, weak=False)


def _use_legacy_reads() -> None:
    """The reads before the marks and the due-time index, in this process only."""
    from django.db.models import Exists, OuterRef, Q

    from claims.models import Workflow, WorkflowClaim, WorkflowStatus, WorkflowVisibility
    from claims.models.claims import HOLDER_INVALID, HOLDER_PRESENT
    from claims.protocol.records import StaleHolders
    from claims.runtime.driver import WorkflowDriver
    from claims.store import OrmClaimStore

    def find_stale_holders(
        self: Any,
        *,
        expired_before_ms: int,
        sweep_above: int | None,
        listing_engine: str = "",
        pairs_fresh_within_ms: int | None = None,
    ) -> StaleHolders:
        stale = set(
            WorkflowClaim.objects.filter(HOLDER_PRESENT)
            .filter(Q(holder_expires_at_ms__lt=expired_before_ms) | HOLDER_INVALID)
            .values_list("workflow_id", flat=True)
        )
        stale.update(self._stale_session_holders(expired_before_ms, None)[0])
        return StaleHolders(sorted(stale), {})

    def list_unheld_running_indexed(self: Any) -> list[str]:
        holder = WorkflowClaim.objects.filter(HOLDER_PRESENT, workflow_id=OuterRef("workflow_id"))
        return list(
            WorkflowVisibility.objects.filter(status=WorkflowStatus.RUNNING)
            .filter(~Exists(holder))
            .order_by("workflow_id")
            .values_list("workflow_id", flat=True)
        )

    def due_now(self: Any, given: Any = None) -> list[str]:
        held = self.registry.held_workflow_ids()
        wake_at: dict[str, Any] = {}
        for start in range(0, len(held), 5_000):
            wake_at.update(
                Workflow.objects.filter(
                    workflow_id__in=held[start : start + 5_000], status=WorkflowStatus.RUNNING
                ).values_list("workflow_id", "state__park__wake_at_ms")
            )
        now = self.clock()
        return [
            wf
            for wf in held
            if wf in wake_at and (not isinstance(wake_at[wf], int) or wake_at[wf] <= now)
        ]

    # No pace on the scan, and every audit a full one.
    from claims.protocol import discovery
    from claims.store import reclaim_cursor

    reclaim_cursor.scan_is_paced = lambda moved_at_ms, now_ms, paced_ms: False  # type: ignore[attr-defined]
    discovery.FULL_AUDIT_EVERY = 1
    OrmClaimStore.find_stale_holders = find_stale_holders  # type: ignore[method-assign,assignment]
    OrmClaimStore.list_unheld_running_indexed = list_unheld_running_indexed  # type: ignore[method-assign]
    WorkflowDriver.due_now = due_now  # type: ignore[method-assign]


def _engine_class(times: StatementTimes) -> Any:
    from claims.engine.local import PASS_NAMES, LocalEngine
    from claims.models import WorkflowClaim
    from claims.protocol.records import Holder
    from claims.services import engines

    class BenchEngine(LocalEngine):
        """A LocalEngine whose cache holds its seeded claims before its first pass, and
        which notes how long each of its passes took inside the window."""

        pass_ms: dict[str, list[float]]
        reclaims: list[tuple[Any, ...]]  # per pass in the window: time, status, stale, tried,
        # won, discovery ms, catch-up

        def start(self) -> None:
            self.pass_ms = defaultdict(list)
            self.reclaims = []
            self.running_since: dict[str, float] = {}
            engines.engine_register(engine_id=self.engine_id, queue=self.queue, now_ms=self.clock())
            self.registry.liveness.start()
            session = self.registry.session
            if session is None or session.epoch != 1:
                raise RuntimeError(f"{self.engine_id}: the seeded claims name session 1")
            rows = WorkflowClaim.objects.filter(holder_engine_id=self.engine_id).values_list(
                "workflow_id",
                "holder_epoch",
                "holder_expires_at_ms",
                "holder_claimed_at_ms",
                "holder_session_epoch",
            )
            sent = self.clock.monotonic_ms()
            for workflow_id, epoch, expires, claimed, session_epoch in rows.iterator(5_000):
                holder = Holder(self.engine_id, epoch, expires, claimed, session_epoch)
                self.registry._granted(workflow_id, holder, sent_monotonic_ms=sent)
            for name in PASS_NAMES:
                thread = threading.Thread(
                    target=self._pass_loop, args=(name,), name=f"pass-{name}", daemon=True
                )
                thread.start()
                self._threads.append(thread)

        def _timed(self, name: str, run: Any) -> dict[str, Any]:
            started = time.perf_counter()
            self.running_since[name] = started
            try:
                return run()
            finally:
                self.running_since.pop(name, None)
                if times.open:
                    self.pass_ms[name].append((time.perf_counter() - started) * 1000)

        def in_flight_ms(self) -> dict[str, float]:
            """Passes still running when the window closed, and for how long so far."""
            now = time.perf_counter()
            return {name: (now - since) * 1000 for name, since in self.running_since.items()}

        def run_reclaim(self) -> dict[str, Any]:
            return self._noted(self._timed("reclaim", super().run_reclaim))

        def run_reclaim_catch_up(self) -> dict[str, Any]:
            return self._noted(self._timed("reclaim", super().run_reclaim_catch_up))

        def _noted(self, summary: dict[str, Any]) -> dict[str, Any]:
            if times.open:
                candidates = summary.get("candidates", {})
                self.reclaims.append(
                    (
                        round(time.time(), 2),
                        summary.get("status"),
                        candidates.get("stale_holders"),
                        summary.get("attempted"),
                        summary.get("reclaimed"),
                        summary.get("discovery_ms"),
                        summary.get("catch_up"),
                    )
                )
            return summary

        def run_wake(self) -> dict[str, Any]:
            return self._timed("wake", super().run_wake)

        def _heartbeat(self, name: str, duration_s: float, summary: dict[str, Any]) -> None:
            with times.heartbeat():
                super()._heartbeat(name, duration_s, summary)

    return BenchEngine


def _answer(times: StatementTimes, **parts: Any) -> dict[str, Any]:
    """What a process sends back: its statements in the window, and ``parts``."""
    return {
        "statement_ms": dict(times.ms),
        "texts": {text: dict(counts) for text, counts in times.texts.items()},
        "statements": dict(times.count),
        **parts,
    }


def _setup_django(plan: Plan) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "weftboard.settings"
    os.environ["DATABASE_URL"] = plan.url
    os.environ.setdefault("WEFTBOARD_SECRET_KEY", "insecure-benchmark-only-key")
    import django

    django.setup()


def run_beat(plan: Plan, ready: Any, start: Any, results: Any, shares: list[Any]) -> None:
    """Beat's part of each tick: at the tick's instant, read for the fleet as fan_out_ticks
    does and hand every engine process the shares; its statements count as "beat"."""
    _setup_django(plan)
    from claims.fleet_clock import fleet_now
    from claims.protocol import ClaimTiming
    from claims.services.fleet_share import fleet_shares

    times = StatementTimes(only="beat")
    _install(times)
    timing = ClaimTiming(renew_interval_ms=plan.interval_ms)
    ready.put(0)
    t0 = start.get()
    interval_s = plan.interval_ms / 1000
    ticks = plan.warmup_ticks + plan.measured_ticks
    read_ms: list[float] = []
    for tick in range(ticks):
        time.sleep(max(0.0, t0 + tick * interval_s - time.time()))
        times.open = times.open or tick == plan.warmup_ticks
        started = time.perf_counter()
        try:
            now_ms, _ = fleet_now()
            payload = {
                engine_id: share.as_json()
                for engine_id, share in fleet_shares(
                    now_ms=now_ms, timing=timing, engine_ids=plan.engine_ids
                ).items()
            }
        except Exception:
            payload = {}  # as fan_out_ticks does: the ticks go without shares
        if times.open:
            read_ms.append((time.perf_counter() - started) * 1000)
        for engines_queue in shares:
            engines_queue.put(payload)
    time.sleep(max(0.0, t0 + ticks * interval_s - time.time()))
    times.open = False
    results.put(
        _answer(
            times,
            pass_ms={"beat": {"beat": read_ms}},
            reclaims={},
            in_flight_ms={},
            held={},
            reclaimed_by={},
        )
    )
    results.close()
    results.join_thread()
    os._exit(0)


def run_engines(
    plan: Plan, ready: Any, start: Any, results: Any, shares: Any | None = None
) -> None:
    """Start the plan's engines, tick them from the instant the parent sends (with beat's
    shares from ``shares`` when the plan has a beat), and send back what the window
    measured; then end the process without disposing (a disposal would release every
    claim)."""
    _setup_django(plan)
    from django.conf import settings

    from claims.protocol import ClaimTiming, OffsetClock
    from claims.protocol.fleet_share import FleetShare
    from claims.workflow_types import load_workflow_modules

    # As the worker does at its start: an engine takes over only the types it registers.
    load_workflow_modules(settings.WEFTBOARD_WORKFLOW_MODULES)

    if plan.legacy:
        _use_legacy_reads()
    times = StatementTimes()
    _install(times)
    engine_class = _engine_class(times)
    timing = ClaimTiming(renew_interval_ms=plan.interval_ms)
    fleet = [
        engine_class(
            engine_id=engine_id,
            queue=f"bench.{engine_id}",
            timing=timing,
            clock=OffsetClock(),
            mode="engine-lease",
        )
        for engine_id in plan.engine_ids
    ]
    for engine in fleet:
        engine.start()
    ready.put(len(fleet))
    t0 = start.get()
    interval_s = plan.interval_ms / 1000
    ticks = plan.warmup_ticks + plan.measured_ticks
    for tick in range(ticks):
        time.sleep(max(0.0, t0 + tick * interval_s - time.time()))
        times.open = times.open or tick == plan.warmup_ticks
        payload: dict[str, Any] = {}
        if shares is not None:
            try:
                payload = shares.get(timeout=interval_s / 2)
            except queue.Empty:
                payload = {}  # beat late: the engines read for themselves
        for engine in fleet:
            share = payload.get(engine.engine_id)
            engine.trigger(None if share is None else FleetShare.from_json(share))
    time.sleep(max(0.0, t0 + ticks * interval_s - time.time()))
    times.open = False
    results.put(
        _answer(
            times,
            pass_ms={engine.engine_id: dict(engine.pass_ms) for engine in fleet},
            reclaims={engine.engine_id: engine.reclaims for engine in fleet},
            in_flight_ms={engine.engine_id: engine.in_flight_ms() for engine in fleet},
            held={engine.engine_id: len(engine.registry.held_workflow_ids()) for engine in fleet},
            reclaimed_by={
                engine.engine_id: sum(
                    engine.metrics.snapshot()["attempts"].get(outcome, 0)
                    for outcome in ("takeover", "acquired")
                )
                for engine in fleet
            },
        )
    )
    results.close()
    results.join_thread()
    os._exit(0)
