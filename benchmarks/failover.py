"""Failover: how long 10,000 workflows held by an engine that died stay unowned.

In-process and on the real clock (the fleet clock, corrected to the database's): engine
A claims 10,000 running workflows through its ClaimRegistry and renews them on every
tick; right after one renewal it is killed (it stops, releasing nothing). Engine B, alive
all along, runs its renew and reclaim sub-passes on the same ticks, each single-flight
on its own thread as the engine does, with ``run_reclaim_pass`` over ``OrmClaimStore``.
A poller watches the database and notes when each workflow is held by B again.

The bound: A's claims run a TTL from its last renewal, then the grace (2 renew
intervals); the next tick after that starts the pass that takes them over, at most one
interval later; add that pass's own duration.
"""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from django.db import connection

from claims.fleet_clock import fleet_clock
from claims.models import WorkflowClaim
from claims.protocol import (
    ClaimMetrics,
    ClaimRegistry,
    ClaimTiming,
    Liveness,
    PerClaimLeases,
    ReclaimPassResult,
    ReclaimTarget,
    SessionLeases,
    run_reclaim_pass,
    run_renew_pass,
)
from claims.protocol.session_lease import EngineSessionLease
from claims.store import OrmClaimStore
from claims.workflow_types import is_type_registered

from .pool import reclaim_pool
from .report import Section, Target, fmt
from .seed import Layout, clear, seed

WORKFLOWS = 10_000
TIMING = ClaimTiming(ttl_ms=3_000, renew_interval_ms=1_000)
RENEWALS_BEFORE_DEATH = 2
POLL_S = 0.05
GIVE_UP_S = 30.0
ENGINE_A = "bench-engine-a"
ENGINE_B = "bench-engine-b"


@dataclass
class Run:
    t0_ms: int = 0  # the moment A died, on the fleet clock
    last_renewal_ms: int = 0  # when A sent its last renewal (of its earliest chunk)
    reheld_at_ms: dict[str, int] = field(default_factory=dict)  # per workflow, since t0
    curve: list[tuple[int, int]] = field(default_factory=list)  # (ms since t0, re-held)
    passes: list[dict[str, int]] = field(default_factory=list)  # B's reclaim passes
    a_renewals: list[int] = field(default_factory=list)  # renewed per pass of A


class Ticks:
    """Beat: every renew interval, wake each sub-pass that is not already running."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self.stopped = threading.Event()
        self.wakeups: list[threading.Event] = []

    def subscribe(self) -> threading.Event:
        event = threading.Event()
        self.wakeups.append(event)
        return event

    def run(self) -> None:
        next_tick = time.monotonic()
        while not self.stopped.is_set():
            for event in list(self.wakeups):
                event.set()
            next_tick += self.interval_s
            self.stopped.wait(max(0.0, next_tick - time.monotonic()))
        for event in self.wakeups:
            event.set()  # let every loop see the stop


def _loop(ticks: Ticks, stop: threading.Event, body: Any) -> threading.Thread:
    wakeup = ticks.subscribe()

    def run() -> None:
        try:
            while True:
                wakeup.wait()
                wakeup.clear()
                if stop.is_set() or ticks.stopped.is_set():
                    return
                if body() is False:
                    return
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _poll(run: Run, ids: set[str], clock: Any) -> None:
    """Note when each workflow is first seen held by B (committed, as anyone reads it)."""
    table = connection.ops.quote_name(WorkflowClaim._meta.db_table)
    deadline = time.monotonic() + GIVE_UP_S
    try:
        with connection.cursor() as cursor:
            while len(run.reheld_at_ms) < len(ids) and time.monotonic() < deadline:
                cursor.execute(
                    f"SELECT workflow_id FROM {table} WHERE holder_engine_id = %s", [ENGINE_B]
                )
                seen_at = clock() - run.t0_ms
                for (workflow_id,) in cursor.fetchall():
                    if workflow_id in ids:
                        run.reheld_at_ms.setdefault(workflow_id, seen_at)
                run.curve.append((seen_at, len(run.reheld_at_ms)))
                time.sleep(POLL_S)
    finally:
        connection.close()


def _engine(
    engine_id: str, store: OrmClaimStore, clock: Any, timing: ClaimTiming, mode: str
) -> ClaimRegistry:
    """One engine's registry; under a session of its own in the engine-lease mode."""
    liveness: Liveness = PerClaimLeases()
    if mode == "engine-lease":
        session = EngineSessionLease(store, engine_id=engine_id, clock=clock, timing=timing)
        liveness = SessionLeases(session)
    return ClaimRegistry(store, engine_id=engine_id, clock=clock, timing=timing, liveness=liveness)


def failover(
    workflows: int | None = None, timing: ClaimTiming | None = None, mode: str = "workflow-lease"
) -> tuple[Run, dict[str, Any]]:
    """Kill engine A after it renewed its claims; return when B holds them all (or gave up).
    ``workflows`` and ``timing`` default to WORKFLOWS and TIMING as they are at the call."""
    import claims.runtime.demo_workflows  # noqa: F401  (registers the types the fleet runs)

    workflows = WORKFLOWS if workflows is None else workflows
    timing = TIMING if timing is None else timing

    clock = fleet_clock()
    clear()
    layout = Layout(
        total=workflows,
        now_ms=clock(),
        ttl_ms=timing.ttl_ms,
        renew_interval_ms=timing.renew_interval_ms,
        ownerless=workflows,
    )
    setup: dict[str, Any] = {"seed_s": seed(layout)["seed_s"]}
    ids = layout.ids("ownerless")
    a = _engine(ENGINE_A, OrmClaimStore(), clock, timing, mode)
    started = time.perf_counter()
    granted = a.acquire_many(ids)
    setup["acquire_s"] = round(time.perf_counter() - started, 2)
    setup["acquired"] = sum(r.status == "acquired" for r in granted.values())
    if setup["acquired"] != workflows:
        raise RuntimeError(f"engine A acquired {setup['acquired']} of {workflows}")

    b_store = OrmClaimStore()
    b = _engine(ENGINE_B, b_store, clock, timing, mode)
    driven: list[str] = []
    # The engine hands each reclaimed workflow to its drive pool; the drive is not the pass.
    target = ReclaimTarget(
        b,
        b_store,
        metrics=ClaimMetrics(),
        on_reclaimed=driven.append,
        is_type_registered=is_type_registered,
    )
    run = Run()
    died = threading.Event()
    stop = threading.Event()
    ticks = Ticks(timing.renew_interval_ms / 1_000)

    def a_renews() -> bool:
        result = run_renew_pass(a)
        run.a_renewals.append(result.renewed_count)
        if len(run.a_renewals) < RENEWALS_BEFORE_DEATH:
            return True
        # Killed right after a renewal: its claims have a whole TTL left (the worst case).
        run.t0_ms = clock()
        # Renewed in chunks, each sent at its own time: the earliest decides when the
        # first claims become stale.
        sent = [
            held.expires_at_ms - timing.ttl_ms
            for held in map(a.held_claim, a.held_workflow_ids())
            if held is not None and held.expires_at_ms is not None
        ]
        if a.session is not None and a.session.renewed_at_ms is not None:
            sent = [a.session.renewed_at_ms]  # one statement renewed them all
        run.last_renewal_ms = min(sent, default=run.t0_ms)
        died.set()
        return False

    with reclaim_pool() as pool:

        def b_pass(catch_up: bool) -> ReclaimPassResult:
            began = clock()
            result = run_reclaim_pass(target, executor=pool, catch_up=catch_up)
            ended = clock()
            if died.is_set():
                run.passes.append(
                    {
                        "start_ms": began - run.t0_ms,
                        "end_ms": ended - run.t0_ms,
                        "reclaimed": result.reclaimed_count,
                        "catch_up": catch_up,
                    }
                )
            return result

        def b_reclaims() -> None:
            # As the engine runs it (LocalEngine._pass_loop): a pass whose budget left
            # some after taking some is followed at once by catch-up passes.
            result = b_pass(catch_up=False)
            while result.reclaimed_count and target.carried:
                result = b_pass(catch_up=True)

        threads = [
            _loop(ticks, stop, a_renews),
            _loop(ticks, stop, lambda: run_renew_pass(b)),
            _loop(ticks, stop, b_reclaims),
        ]
        beat = threading.Thread(target=ticks.run, daemon=True)
        beat.start()
        try:
            if not died.wait(timeout=30):
                raise RuntimeError("engine A never reached its last renewal")
            poller = threading.Thread(target=_poll, args=(run, set(ids), clock), daemon=True)
            poller.start()
            poller.join()
        finally:
            stop.set()
            ticks.stopped.set()
            beat.join()
            for thread in threads:
                thread.join(timeout=60)
    clear()
    return run, setup


def _percentile(values: list[int], q: float) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))])


def run(
    *, binding: bool, mode: str = "workflow-lease", workflows: int | None = None
) -> tuple[dict[str, Any], Section, list[Target]]:
    workflows = WORKFLOWS if workflows is None else workflows
    run, setup = failover(workflows, TIMING, mode)
    ttl, interval = TIMING.ttl_ms, TIMING.renew_interval_ms
    eligible_ms = ttl + 2 * interval - (run.t0_ms - run.last_renewal_ms)
    times = list(run.reheld_at_ms.values())
    all_held = len(times) == workflows
    last = max(times) if times else float("nan")
    taking = [p for p in run.passes if p["reclaimed"]]
    # The durations of the passes that took some, added: one pass, or a pass and the
    # catch-up passes that followed it (the time between passes is not the passes').
    pass_ms = sum(p["end_ms"] - p["start_ms"] for p in taking)
    bound_ms = ttl + 3 * interval + pass_ms
    earliest = min(times) if times else float("nan")

    section = Section(
        f"FAILOVER ({mode})  {workflows:,} workflows held by engine A, killed right after a "
        "renewal; "
        f"engine B reclaims on every tick (TTL {ttl / 1000:g} s, renew interval "
        f"{interval / 1000:g} s, real clock, in-process)",
        ("", "ms since death", "bound ms", "vs bound"),
    )
    section.rows.append(
        (
            "all re-held by B" if all_held else f"re-held {len(times):,} of {workflows:,}",
            fmt(last),
            fmt(bound_ms),
            f"{last / bound_ms:.2f}",
        )
    )
    section.rows.append(("  per workflow: median", fmt(statistics.median(times)), "", ""))
    section.rows.append(("  per workflow: p95", fmt(_percentile(times, 0.95)), "", ""))
    section.rows.append(("  per workflow: max", fmt(last), "", ""))
    section.rows.append(
        ("  earliest (none before stale)", fmt(earliest), f">= {fmt(eligible_ms)}", "")
    )
    section.notes.append(
        f"bound = TTL {ttl:,} + grace 2 x {interval:,} + one tick {interval:,} + the duration "
        f"of the passes that took them over, added ({pass_ms:,} ms: a pass stops at "
        "its budget of half an interval and catch-up passes follow at once); A's claims "
        "become stale "
        f"{fmt(eligible_ms)} ms after its death (its last renewal pass sent its first "
        f"statement {run.t0_ms - run.last_renewal_ms} ms before)"
    )
    section.notes.append(
        "B's reclaim passes after the death (start-end ms, reclaimed): "
        + ", ".join(
            f"{p['start_ms']}-{p['end_ms']}: {p['reclaimed']}"
            + (" (catch-up)" if p["catch_up"] else "")
            for p in run.passes
        )
    )
    section.notes.append(
        f"times are when a poll ({POLL_S * 1000:g} ms apart) first saw the workflow held by B; "
        f"A acquired them in {setup['acquire_s']:.1f} s (acquire_many) and renewed "
        f"{RENEWALS_BEFORE_DEATH} times ({', '.join(f'{n:,}' for n in run.a_renewals)}); "
        "beat is a thread ticking every interval; a Celery variant with real processes "
        "lives in tests/integration"
    )
    safe = not times or earliest >= eligible_ms
    if not safe:
        section.notes.append("UNSAFE: a workflow was taken over before its claim was stale")
    key = "failover" if mode == "workflow-lease" else f"failover_{mode}"
    targets = [
        Target(
            f"{key}.all_reheld",
            f"failover ({mode}): {workflows:,} re-held after death",
            last if all_held else GIVE_UP_S * 1_000,
            bound_ms,
            "ms",
            binding,
        ),
        Target(
            f"{key}.vs_bound",
            f"failover ({mode}): time to re-held vs bound",
            (last if all_held else GIVE_UP_S * 1_000) / bound_ms,
            1.0,
            "x",
            binding,
        ),
    ]
    payload = {
        "mode": mode,
        "workflows": workflows,
        "ttl_ms": ttl,
        "renew_interval_ms": interval,
        "bound_ms": bound_ms,
        "stale_after_ms": eligible_ms,
        "takeover_pass_ms": pass_ms,
        "all_reheld": all_held,
        "all_reheld_ms": last,
        "per_workflow_ms": {
            "median": statistics.median(times) if times else None,
            "p95": _percentile(times, 0.95) if times else None,
            "max": last,
            "min": earliest,
        },
        "safe": safe,
        "curve": run.curve,
        "passes": run.passes,
        "setup": setup,
        "in_process": True,
    }
    return payload, section, targets
