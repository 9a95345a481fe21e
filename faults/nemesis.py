"""The nemesis: faults injected at random from a seed, one at a time, each healed in turn.

Every round shuffles the six kinds, so a run long enough for one round sees each:
- ``kill``: SIGKILL an engine, restart it (a new engine identity) a moment later;
- ``pause``: SIGSTOP an engine for 2-3 x TTL, then SIGCONT: it wakes up deposed, or, if
  beat marked it dead meanwhile (silent past 3 x TTL), it releases what it still holds and
  exits with 75, and the nemesis starts the slot again as its supervisor would;
- ``db-drop``: terminate an engine's database sessions (or every engine's) from PostgreSQL;
- ``redis-restart``: crash the broker (losing every queued tick and order) and restart it;
- ``skew-within``: restart an engine with its clock off by up to half the grace, which the
  protocol absorbs;
- ``skew-beyond``: restart an engine with its clock off by 2-3 x TTL, beyond what any
  grace absorbs (a live holder's expiry is at least TTL - renew interval ahead, plus the
  grace): expiry judgements by or about it are wrong, and only fencing keeps the history
  safe;
- ``cut``: cut every connection between the proxied engine and PostgreSQL, at random
  instants for a few seconds, under load: some statements commit and their answer is lost;
- ``stall``: SIGSTOP an engine for a third to four fifths of the TTL (it keeps its claims),
  as a starved process or a paused VM would, then SIGCONT.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from dataclasses import dataclass, field

from django.db import close_old_connections, connection

from claims.models import Engine, EngineStatus, Workflow, WorkflowClaim, WorkflowStatus

from .fleet_under_test import EngineSlot, Fleet
from .history import database_now_ms
from .processes import BackgroundThread

# A dead engine's exit code (claims.engine.worker.DEAD_ENGINE_EXIT_CODE), and how long a
# resumed engine may take to find it was marked dead, release what it holds and leave.
DEAD_ENGINE_EXIT_CODE = os.EX_TEMPFAIL
LEAVE_DEAD_WITHIN_S = 60

KINDS = (
    "kill",
    "pause",
    "db-drop",
    "redis-restart",
    "skew-within",
    "skew-beyond",
    "cut",
    "stall",
)


@dataclass
class FaultRecord:
    kind: str
    target: str
    started_ms: int
    ended_ms: int = 0
    detail: str = ""
    # The engine a kill or a pause took out, and the running workflows it held then.
    engine_id: str | None = None
    held: list[str] = field(default_factory=list)


@dataclass
class Nemesis(BackgroundThread):
    fleet: Fleet
    seed: int
    until_monotonic: float
    short: bool = False
    records: list[FaultRecord] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    thread_name = "nemesis"

    # -- schedule --------------------------------------------------------------------------

    def _run(self) -> None:
        rng = random.Random(f"{self.seed}-nemesis")
        try:
            while True:
                kinds = list(KINDS)
                rng.shuffle(kinds)
                for kind in kinds:
                    if self._stop.is_set() or time.monotonic() >= self.until_monotonic:
                        return
                    self._inject(rng, kind)
                    if self._stop.wait(rng.uniform(1.0, 3.0)):
                        return
        except Exception as error:  # a harness bug must surface in the report, not vanish
            self.errors.append(f"nemesis stopped: {error!r}")
        finally:
            self._heal_all()
            close_old_connections()

    def _hold(self, low_s: float, high_s: float, rng: random.Random) -> None:
        scale = 0.5 if self.short else 1.0
        self._stop.wait(rng.uniform(low_s, high_s) * scale)

    def _inject(self, rng: random.Random, kind: str) -> None:
        live = [s for s in self.fleet.slots if self.fleet.engine_live(s)]
        if kind in ("kill", "pause"):
            # A death matters by what it strands: prefer an engine that holds running work.
            live = [s for s in live if self._held_running(s)] or live
        if kind == "cut":
            live = [s for s in live if s.name == self.fleet.proxied_slot] or live
        slot = rng.choice(live)
        record = FaultRecord(kind=kind, target=slot.name, started_ms=database_now_ms())
        self.records.append(record)
        ttl_s = self.fleet.timing.ttl_ms / 1000
        grace_ms = self.fleet.timing.grace_ms
        if kind == "kill":
            self._mark_death(record, slot)
            assert slot.process is not None
            slot.process.send(signal.SIGKILL)
            slot.process.wait(10)
            self._hold(0.5, 2 * ttl_s, rng)
            self.fleet.engine_start(slot)
        elif kind == "pause":
            self._mark_death(record, slot)
            # Longer than TTL + grace, so the fleet must take its claims over.
            self._stop_for(slot, rng.uniform(2.0, 3.0) * ttl_s, record)
            resumed_ms = database_now_ms()
            self._restart_if_it_left_dead(slot, record, resumed_ms)
        elif kind == "stall":
            # Shorter than the TTL: it keeps its claims, and must not lose track of them.
            self._stop_for(slot, rng.uniform(0.33, 0.8) * ttl_s, record)
        elif kind == "cut":
            proxy = self.fleet.proxy
            if proxy is None or slot.name != self.fleet.proxied_slot:
                record.detail = "no proxied engine live"
            else:
                until = time.monotonic() + rng.uniform(2.0, 4.0)
                cuts = links = 0
                while time.monotonic() < until and not self._stop.is_set():
                    links += proxy.cut()
                    cuts += 1
                    self._stop.wait(rng.uniform(0.05, 0.4))
                record.detail = f"{cuts} cuts, {links} connections"
        elif kind == "db-drop":
            everyone = rng.random() < 0.3
            pattern = "weftboard-engine%" if everyone else f"weftboard-{slot.name}"
            record.target = "every engine" if everyone else slot.name
            record.detail = f"{self._terminate_sessions(pattern)} sessions terminated"
            self._stop.wait(1.0)
        elif kind == "redis-restart":
            record.target = "redis"
            self.fleet.redis_crash()
            down_s = rng.uniform(1.0, 2 * ttl_s)
            record.detail = f"down {down_s:.1f} s"
            self._stop.wait(down_s)
            self.fleet.redis_start()
        else:
            bound = grace_ms / 2 if kind == "skew-within" else 0
            skew = (
                round(rng.uniform(0.2, 1.0) * bound)
                if bound
                else round(rng.uniform(2.0, 3.0) * self.fleet.timing.ttl_ms)
            ) * rng.choice((1, -1))
            record.detail = f"clock {skew:+d} ms"
            self.fleet.engine_start(slot, skew_ms=skew)
            self._hold(8, 15, rng)
            self.fleet.engine_start(slot)
        record.ended_ms = database_now_ms()

    # -- helpers ---------------------------------------------------------------------------

    def _stop_for(self, slot: EngineSlot, seconds: float, record: FaultRecord) -> None:
        """SIGSTOP the engine for ``seconds``, then SIGCONT."""
        assert slot.process is not None
        slot.process.send(signal.SIGSTOP)
        slot.stopped = True
        record.detail = f"stopped {seconds:.1f} s"
        self._stop.wait(seconds)
        slot.process.send(signal.SIGCONT)
        slot.stopped = False

    def _restart_if_it_left_dead(
        self, slot: EngineSlot, record: FaultRecord, resumed_ms: int
    ) -> None:
        """Wait until the resumed engine heartbeats again, or, marked dead, has left: then
        start its slot afresh (a new engine identity), as its supervisor would."""
        process = slot.process
        if process is None or record.engine_id is None:
            return
        deadline = time.monotonic() + LEAVE_DEAD_WITHIN_S
        while process.alive():
            heard = Engine.objects.filter(
                engine_id=record.engine_id, heartbeat_at_ms__gt=resumed_ms
            ).exclude(status=EngineStatus.DEAD)
            if heard.exists():
                return
            if time.monotonic() > deadline:
                self.errors.append(f"{slot.name} neither heartbeat nor left after its pause")
                return
            time.sleep(0.1)
        code = process.wait(0)
        record.detail += f"; marked dead, exited {code}, started again"
        if code != DEAD_ENGINE_EXIT_CODE:
            self.errors.append(
                f"{slot.name} exited {code} after its pause, not {DEAD_ENGINE_EXIT_CODE}"
            )
        self.fleet.engine_start(slot)

    def _engine_id(self, slot: EngineSlot) -> str | None:
        if slot.process is None:
            return None
        return (
            Engine.objects.filter(pid=slot.process.pid, hostname=self.fleet.hostname)
            .exclude(status=EngineStatus.STOPPED)
            .values_list("engine_id", flat=True)
            .first()
        )

    def _held_running(self, slot: EngineSlot) -> list[str]:
        engine_id = self._engine_id(slot)
        if engine_id is None:
            return []
        running = Workflow.objects.filter(status=WorkflowStatus.RUNNING).values("workflow_id")
        return list(
            WorkflowClaim.objects.filter(
                holder_engine_id=engine_id, workflow_id__in=running
            ).values_list("workflow_id", flat=True)
        )

    def _mark_death(self, record: FaultRecord, slot: EngineSlot) -> None:
        """Which engine is about to go, and which running workflows it holds right now."""
        record.engine_id = self._engine_id(slot)
        record.held = self._held_running(slot)
        record.started_ms = database_now_ms()

    def _terminate_sessions(self, pattern: str) -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE application_name LIKE %s AND pid <> pg_backend_pid()",
                [pattern],
            )
            return int(cursor.fetchone()[0])

    def _heal_all(self) -> None:
        """Every engine running, awake and on the right clock; the broker up."""
        if self.fleet.redis is None or not self.fleet.redis.alive():
            self.fleet.redis_start()
        for slot in self.fleet.slots:
            if slot.process is not None and slot.stopped:
                slot.process.send(signal.SIGCONT)
                slot.stopped = False
            if slot.process is None or not slot.process.alive() or slot.skew_ms:
                self.fleet.engine_start(slot)
