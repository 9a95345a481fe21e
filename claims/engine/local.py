"""The engine that lives in this worker process: its claims, its passes and its drives.

Each sub-pass (renew, reclaim, wake) runs on its own thread and is
single-flight: a tick only wakes the threads, so a hung reclaim never delays
renewal. Drives run on a separate pool so a long workflow never blocks a pass.

Ticks come from beat through the broker. When none has come for
SELF_TICK_AFTER renew intervals (the broker restarting, beat down), the passes
run on the engine's own timer, one per renew interval, until ticks return: a
broker outage must not let every engine's claims lapse at once, nor leave parked
workflows undriven.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.db import close_old_connections

from claims.engine import outages
from claims.engine.connections import HealthyConnections
from claims.engine.death import DeathWatch
from claims.engine.drain import EngineDrain
from claims.engine.drive_pool import DrivePool
from claims.engine.heartbeat import EngineHeartbeat
from claims.models import EngineStatus
from claims.protocol import (
    ClaimMetrics,
    ClaimRegistry,
    ClaimTiming,
    Liveness,
    OffsetClock,
    PerClaimLeases,
    ReclaimTarget,
    SessionLeases,
    run_reclaim_pass,
    run_renew_pass,
)
from claims.protocol.constants import EngineOwnershipMode
from claims.protocol.fleet_share import FleetShare
from claims.protocol.passes import RECLAIM_POOL_SIZE
from claims.protocol.session_lease import EngineSessionLease
from claims.runtime.driver import WorkflowDriver
from claims.services import engines
from claims.store import OrmClaimStore
from claims.workflow_types import is_type_registered, registered_types

logger = logging.getLogger("weftboard.claims")

PASS_NAMES = ("renew", "reclaim", "wake")
DRIVE_POOL_SIZE = 8
# Behind a mass failure, new drives wait at most this many renew intervals in all: about a
# failover's bound (TTL + grace + 2 intervals at the default timing), after which the
# claims taken so far are driven even if more keep coming.
BEHIND_AT_MOST = 6
# Beat's ticks are one renew interval apart: one lost or late tick is weather, two are an
# outage. A claim is renewed at most two intervals after the last renewal, well inside
# its TTL (at least three intervals: ClaimTiming refuses less).
SELF_TICK_AFTER = 2.0


class LocalEngine:
    def __init__(
        self,
        *,
        engine_id: str,
        queue: str,
        timing: ClaimTiming,
        clock: OffsetClock,
        name: str = "",
        mode: EngineOwnershipMode = "workflow-lease",
        on_dead: Callable[[threading.Thread], None] | None = None,
    ):
        """``on_dead`` is called with the disposal thread once the engine found that beat
        marked it dead (claims/engine/death.py): the worker ends its process with it."""
        self.engine_id = engine_id
        self.name = name  # the Celery worker's node name, shown beside the id
        self.queue = queue
        self.timing = timing
        self.clock = clock
        self.store = OrmClaimStore()
        self.metrics = ClaimMetrics()
        self.registry = ClaimRegistry(
            self.store,
            engine_id=engine_id,
            clock=clock,
            timing=timing,
            metrics=self.metrics,
            monotonic=clock.monotonic_ms,
            liveness=self._liveness(mode),
        )
        self.drain = EngineDrain(self.registry, disposing=self.is_disposing, wake=self.trigger)
        self.driver = WorkflowDriver(self.registry, clock=clock, disposing=self.drain.drives_pause)
        self.target = ReclaimTarget(
            self.registry,
            self.store,
            metrics=self.metrics,
            on_reclaimed=self.submit_drive,
            is_type_registered=is_type_registered,
            registered_types=registered_types,
            # Beat ticks every engine at once: half an interval lets one engine read the
            # fleet's page per tick, and a lone engine still reads one every pass.
            scan_paced_ms=timing.renew_interval_ms // 2,
        )
        self._disposing = threading.Event()
        self._stopped = threading.Event()
        self._on_dead = on_dead
        self.death = DeathWatch(engine_id, mode=mode, on_dead=self._leave_dead)
        self._disposal_lock = threading.RLock()  # the signal handler may re-enter it
        self.disposal: threading.Thread | None = None
        self._wakeups = {name: threading.Event() for name in PASS_NAMES}
        # Beat's share of its reads, from the last tick, until the pass that uses it takes
        # it: (the share, when it came, by the monotonic clock).
        self._shares: dict[str, tuple[FleetShare, int]] = {}
        self._shares_lock = threading.Lock()
        self._self_ticking = False
        self._behind = False  # the last reclaim pass took some and left some for later
        self.self_ticks = 0
        self._threads: list[threading.Thread] = []
        # New drives wait while a reclaim pass takes over, at most an interval.
        self._drives = DrivePool(DRIVE_POOL_SIZE, gate_timeout_s=timing.renew_interval_ms / 1000)
        self._reclaim_pool = ThreadPoolExecutor(RECLAIM_POOL_SIZE, thread_name_prefix="reclaim")
        self.heartbeat = EngineHeartbeat(
            self.registry, clock=clock, metrics=self.metrics, pass_names=PASS_NAMES
        )
        self.database = outages.DatabaseOutage(engine_id)

    def _liveness(self, mode: EngineOwnershipMode) -> Liveness:
        """The one place the ownership mode chooses how this engine keeps its claims alive
        (claims/protocol/liveness.py): the registry never asks the mode again."""
        if mode == "engine-lease":
            # Every claim lives while this engine's session does.
            session = EngineSessionLease(
                self.store,
                engine_id=self.engine_id,
                clock=self.clock,
                timing=self.timing,
                monotonic=self.clock.monotonic_ms,
            )
            return SessionLeases(session)
        return PerClaimLeases()

    # -- lifecycle ---------------------------------------------------------------

    def start(self) -> None:
        engines.engine_register(
            engine_id=self.engine_id, queue=self.queue, now_ms=self.clock(), name=self.name
        )
        self.registry.liveness.start()
        for name in PASS_NAMES:
            thread = threading.Thread(
                target=self._pass_loop, args=(name,), name=f"pass-{name}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        self.trigger()

    def trigger(self, share: FleetShare | None = None) -> None:
        """A tick: wake every sub-pass that is not already running. ``share``: beat's reads
        for this engine, which the next reclaim and wake passes use where they cover them."""
        with self._shares_lock:
            untaken = self._shares.get("reclaim")
            self._shares.clear()
            came = self.clock.monotonic_ms()
            if share is not None:
                self._shares = {"reclaim": (share, came), "wake": (share, came)}
            if untaken is not None and untaken[0].scanned:
                # Beat moved the scan cursor past that page: the next pass attempts it.
                if share is None:
                    self._shares["reclaim"] = (untaken[0].page_only(), untaken[1])
                else:
                    self._shares["reclaim"] = (share.with_earlier_page(untaken[0]), came)
        for event in self._wakeups.values():
            event.set()

    def _take_share(self, name: str) -> FleetShare | None:
        """The share of the last tick for pass ``name``, once, if it came within the last
        interval: an older one describes a fleet that has moved on since."""
        with self._shares_lock:
            taken = self._shares.pop(name, None)
        if taken is None:
            return None
        share, came = taken
        if self.clock.monotonic_ms() - came >= self.timing.renew_interval_ms:
            # Too old to stand in for any read, but a page beat read is still to attempt.
            return share.page_only() if share.scanned else None
        return share

    def _await_tick(self, name: str) -> None:
        """Wait for beat's tick; without one for SELF_TICK_AFTER intervals, tick ourselves.
        The renew thread speaks for the engine in the log, once per outage."""
        # Once ticks are known to be missing, keep beat's own cadence of one per interval:
        # the takeover bound (TTL + 3 x renew interval) counts on a reclaim pass that often.
        intervals = 1.0 if self._self_ticking else SELF_TICK_AFTER
        woken = self._wakeups[name].wait(intervals * self.timing.renew_interval_ms / 1000)
        self._wakeups[name].clear()
        if name != "renew" or self._stopped.is_set():
            return
        if not woken:
            self.self_ticks += 1
            if not self._self_ticking:
                self._self_ticking = True
                outages.log_ticks_missing(self.engine_id, self.timing, SELF_TICK_AFTER)
        elif self._self_ticking:
            self._self_ticking = False
            outages.log_ticks_back(self.engine_id)

    def is_disposing(self) -> bool:
        return self._disposing.is_set()

    def begin_disposal(self) -> None:
        """Synchronous and permanent; safe to call from a signal handler."""
        self._disposing.set()
        self.target.mark_disposing()

    def dispose_in_background(self) -> threading.Thread:
        """Begin disposal now and run ``dispose()`` on a thread of its own, once; a later
        call returns the same thread."""
        with self._disposal_lock:
            if self.disposal is None:
                self.begin_disposal()
                disposal = threading.Thread(
                    target=self.dispose, name="engine-disposal", daemon=True
                )
                disposal.start()
                self.disposal = disposal  # once started: other threads join it
            return self.disposal

    def _leave_dead(self) -> None:
        """Beat marked this engine dead: take nothing more, release what it still holds
        (by compare-and-swap: a claim taken over meanwhile is left alone), and let the
        worker end the process. Its row stays dead: dispose() writes no status over it."""
        disposal = self.dispose_in_background()
        if self._on_dead is not None:
            self._on_dead(disposal)

    def dispose(self, *, timeout_s: float = 30.0) -> None:
        """Stop passes, let drives reach their next checkpoint, release every claim.

        May run on any thread; its database connection is its own and closed at the end.
        """
        self.begin_disposal()
        try:
            engines.engine_set_status(
                engine_id=self.engine_id, status=EngineStatus.DISPOSING, now_ms=self.clock()
            )
        except Exception:
            logger.exception("could not mark engine %s disposing", self.engine_id)
        self._stopped.set()
        self.trigger()
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._drives.shutdown()
        self._reclaim_pool.shutdown(wait=True, cancel_futures=True)
        close_old_connections()
        self.registry.release_all()
        self.heartbeat.flush_counters()
        engines.engine_set_status(
            engine_id=self.engine_id, status=EngineStatus.STOPPED, now_ms=self.clock()
        )
        close_old_connections()
        logger.info("engine %s stopped; its claims are released", self.engine_id)

    # -- drives ------------------------------------------------------------------

    def submit_drive(self, workflow_id: str) -> None:
        """Hand a claimed workflow to the drive pool; raises if the pool is closed."""
        self._drives.submit(self._drive, workflow_id)

    def _drive(self, workflow_id: str) -> None:
        try:
            with self.drain.driving(workflow_id) as may_drive:
                outcome = self.driver.drive(workflow_id) if may_drive else "draining"
            logger.debug("drive of %s: %s", workflow_id, outcome)
        except Exception:
            logger.exception("drive of workflow %s failed", workflow_id)

    def adopt(self, workflow_id: str, epoch: int) -> str:
        """An operator granted this engine the claim: cache it and drive it."""
        result = self.registry.adopt(workflow_id, epoch)
        if result.status == "adopted" and not self.drain.drives_pause():
            self.submit_drive(workflow_id)
        return result.status

    # -- passes --------------------------------------------------------------------

    def _pass_loop(self, name: str) -> None:
        run = {"renew": self.run_renew, "reclaim": self.run_reclaim, "wake": self.run_wake}[name]
        while not self._stopped.is_set():
            if name == "reclaim" and self._catch_up_due():
                self._run_pass(name, self.run_reclaim_catch_up)
                continue
            self._await_tick(name)
            if name == "reclaim" and not self._behind and not self._share_has_work_now():
                # Every engine renews on the same ticks, so a dead engine's claims lapse
                # just after a tick; reclaiming half an interval later takes them over
                # then, instead of up to a whole interval after they lapsed. Behind a mass
                # failure there is no such wait: the stale claims are there already. Nor
                # when beat's share names workflows to take and shows that nothing can
                # lapse before the next tick. An idle pass keeps the wait, so that its
                # heartbeat does not queue on the engine row behind renew's and wake's.
                self._stopped.wait(self.timing.renew_interval_ms / 2000)
            if self._stopped.is_set():
                break
            if name != "renew" and self.is_disposing():
                continue
            self._run_pass(name, run)

    def _run_pass(self, name: str, run: Callable[[], dict[str, Any]]) -> None:
        started = time.monotonic()
        try:
            close_old_connections()
            summary = run()
            self._heartbeat(name, time.monotonic() - started, summary)
            self.database.succeeded()
        except outages.DATABASE_OUTAGE_ERRORS as error:
            self.database.failed(name, error)  # once per outage, not once per tick
        except Exception:
            logger.exception("%s pass of engine %s failed", name, self.engine_id)
        finally:
            close_old_connections()

    def _share_has_work_now(self) -> bool:
        with self._shares_lock:
            taken = self._shares.get("reclaim")
        if taken is None:
            return False
        share, now = taken[0], self.clock()
        # Quiet through the time the waiting pass would run: it would find nothing stale
        # either, so running now loses nothing.
        half = self.timing.renew_interval_ms // 2
        return bool(share.unheld or share.scanned) and share.quiet_at(now + half)

    def _catch_up_due(self) -> bool:
        """Behind a mass failure (the last pass took some and had no time for the rest)
        and no tick waiting: attempt the rest now rather than an interval later. A tick
        runs a full pass, with discovery, instead."""
        return (
            self._behind
            and self.target.carried > 0
            and not self._wakeups["reclaim"].is_set()
            and not self.is_disposing()
            and not self._stopped.is_set()
        )

    def run_renew(self) -> dict[str, Any]:
        result = run_renew_pass(self.registry, self.metrics)
        self.drain.sync()
        return {
            "renewed": result.renewed_count,
            "failed": result.failed_count,
            "self_ticks": self.self_ticks,
            "draining": self.drain.active,
        }

    def run_reclaim(self) -> dict[str, Any]:
        return self._reclaim(catch_up=False)

    def run_reclaim_catch_up(self) -> dict[str, Any]:
        """A reclaim pass without discovery, over what the last one left (a mass failure)."""
        return self._reclaim(catch_up=True)

    def _reclaim(self, *, catch_up: bool) -> dict[str, Any]:
        self._behind = False
        share = None if catch_up else self._take_share("reclaim")
        if self.drain.active:
            return {"status": "draining"}
        if self.death.found:
            return {"status": "dead"}
        # The one pass that acquires and takes over: never for an engine written off. The
        # check reads the engine's own row: first thing, beside the pass's own reads; under
        # beat's share, only once there is something to attempt, so that an idle pass
        # sends no statement.
        if share is None and not self.death.confirm_alive(before="reclaim"):
            return {"status": "dead"}
        result = run_reclaim_pass(
            self.target,
            executor=HealthyConnections(self._reclaim_pool),
            attempting=self._drives.held_back,
            catch_up=catch_up,
            share=share,
            may_attempt=(
                (lambda: True)
                if share is None
                else (lambda: self.death.confirm_alive(before="reclaim"))
            ),
        )
        if result.status == "refused":
            return {"status": "dead"}
        discovery = self.target.last_discovery
        # Beyond the last discovery's window (still waiting for the next full pass), and
        # of the window once the pass's budget was spent.
        deferred = discovery.deferred + result.deferred_count
        if result.status == "completed":
            # Behind a mass failure and taking it: ownership first. Catch-up passes follow
            # at once, and the drives wait until a pass has taken everything (at most two
            # intervals after the last pass that took some and left some, and at most
            # BEHIND_AT_MOST intervals in all). Candidates nobody can take (a type no engine
            # runs) hold nothing back: such a pass takes none.
            self._behind = bool(result.deferred_count and result.reclaimed_count)
            if deferred and result.reclaimed_count:
                interval_s = self.timing.renew_interval_ms / 1000
                self._drives.behind(2 * interval_s, at_most_s=BEHIND_AT_MOST * interval_s)
            else:
                self._drives.caught_up()
        return {
            "status": result.status,
            "catch_up": catch_up,
            "discovery_ms": result.discovery_ms,
            "reclaimed": result.reclaimed_count,
            "attempted": len(result.outcomes),
            "errors": sum(status == "error" for _, status in result.outcomes),
            # The last discovery's, which a catch-up pass does not repeat.
            "candidates": {
                "stale_holders": discovery.stale_holders,
                "unheld_indexed": discovery.unheld_indexed,
                "authoritative_scan": discovery.authoritative_scan,
                "pending_redrives": discovery.pending_redrives,
            },
            "deferred": deferred,
            "scanned": discovery.scanned,
            "wrapped": discovery.wrapped,
        }

    def run_wake(self) -> dict[str, Any]:
        if self.drain.active:
            return {"driven": 0, "drain_released": self.drain.release_idle()}
        share = self._take_share("wake")
        due = self.driver.due_now(None if share is None else share.due)
        for workflow_id in due:
            self.submit_drive(workflow_id)
        return {"driven": len(due)}

    def _heartbeat(self, name: str, duration_s: float, summary: dict[str, Any]) -> None:
        applied = self.heartbeat.after_pass(name, duration_s, summary)
        # Applied to no row: beat marked this engine dead (or its row is gone). While it
        # leaves anyway, a row that stopped or died under it changes nothing.
        if not applied and not self.is_disposing():
            self.death.found_dead(found_by=f"{name}-heartbeat")
