"""The fleet's discovery with nothing stranded: 1,000,000 running workflows, all held, over
5, 20 and 50 engines, every engine running its real passes at once (docs/design.md §4).

Each engine is the product's ``LocalEngine`` in the engine-lease mode (the mode a fleet
this size runs: the workflow-lease mode would renew a million claims per interval), ten
to a process (``discovery_child``), ticked together once per renew interval as beat
ticks them, for WARMUP_TICKS and then MEASURED_TICKS intervals. Per interval:

- the statement time of every reclaim and wake pass of the fleet, summed over the
  engines (each statement timed by the engine that sent it: an upper bound of the time
  the database spent on it), and apart from it the heartbeats that follow each pass;
- the database's own active time (``pg_stat_database.active_time``) over the window,
  every statement of every engine included (renewals and heartbeats too);
- the busiest engine's reclaim pass.

"before": the same engines with the discovery and wake reads as they were before the
ownerless marks and the due-time index (the anti-join over every running workflow, the
OR over every held claim, the park of every held workflow by id), on the same seed.
"""

from __future__ import annotations

import multiprocessing
import queue
import statistics
import time
from typing import Any

from django.db import connection

from claims.models import (
    ClaimCounter,
    Engine,
    EngineEvent,
    EngineSession,
    PendingRedrive,
    ReclaimCursor,
    RetiredPassHistograms,
)
from claims.protocol import ClaimTiming

from . import discovery_child
from .bulk_child import database_url
from .report import Section, Target, fmt
from .seed import Layout, clear, seed

TOTAL = 1_000_000
ENGINE_COUNTS = (5, 20, 50)
INTERVAL_MS = ClaimTiming().renew_interval_ms
WARMUP_TICKS = 2
MEASURED_TICKS = 10
READY_TIMEOUT_S = 600.0
FLEET_TARGET_MS = 250.0  # reclaim and wake of the whole fleet, per interval, at 50 engines
GROWTH_TARGET = 1.5  # from the fewest engines to the most
VARIANTS = ("now", "before")


def _forget_engines() -> None:
    """The engines of a run leave nothing the next one would trip on: their rows, their
    sessions (the next run opens session 1 again, the one the seeded claims name)."""
    for model in (
        EngineEvent,
        ClaimCounter,
        RetiredPassHistograms,
        PendingRedrive,
        ReclaimCursor,
        EngineSession,
        Engine,
    ):
        # By SQL: the ORM refuses to delete session rows, which the product never does.
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {connection.ops.quote_name(model._meta.db_table)}")


def _active_ms() -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT active_time FROM pg_stat_database WHERE datname = current_database()"
        )
        return float(cursor.fetchone()[0])


def _wait_for_backends_to_end(timeout_s: float = 60.0) -> None:
    """The engines' connections close with their processes; their statistics are in once
    their backends are gone."""
    deadline = time.monotonic() + timeout_s
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid()"
            )
            if not cursor.fetchone()[0]:
                return
            time.sleep(0.2)


def _run_fleet(engines: int, *, legacy: bool) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    ready, results = context.Queue(), context.Queue()
    ids = [f"bench-live-{i}" for i in range(engines)]
    per = discovery_child.ENGINES_PER_PROCESS
    groups = [ids[start : start + per] for start in range(0, len(ids), per)]
    starts = [context.Queue() for _ in groups]
    url = database_url(connection.settings_dict)
    processes = [
        context.Process(
            target=discovery_child.run_engines,
            args=(
                discovery_child.Plan(url, group, INTERVAL_MS, WARMUP_TICKS, MEASURED_TICKS, legacy),
                ready,
                start,
                results,
            ),
            name=f"bench-engines-{n}",
        )
        for n, (group, start) in enumerate(zip(groups, starts, strict=True))
    ]
    for process in processes:
        process.start()
    try:
        started = sum(ready.get(timeout=READY_TIMEOUT_S) for _ in processes)
        if started != engines:
            raise RuntimeError(f"{started} of {engines} engines started")
        interval_s = INTERVAL_MS / 1000
        t0 = time.time() + 0.5
        for start in starts:
            start.put(t0)
        time.sleep(max(0.0, t0 + WARMUP_TICKS * interval_s - 0.05 - time.time()))
        active_before = _active_ms()
        gathered = [
            results.get(timeout=(WARMUP_TICKS + MEASURED_TICKS) * interval_s + 120)
            for _ in processes
        ]
    except queue.Empty as error:
        raise RuntimeError("the benchmark's engines did not answer in time") from error
    finally:
        for process in processes:
            process.join(60)
            if process.is_alive():
                process.kill()
    _wait_for_backends_to_end()
    active = _active_ms() - active_before
    return _summary(gathered, engines, active)


def _summary(gathered: list[dict[str, Any]], engines: int, active_ms: float) -> dict[str, Any]:
    statement_ms: dict[str, float] = {}
    statements: dict[str, int] = {}
    reclaim_passes: list[float] = []
    wake_passes: list[float] = []
    held: dict[str, int] = {}
    for part in gathered:
        for name, ms in part["statement_ms"].items():
            statement_ms[name] = statement_ms.get(name, 0.0) + ms
        for name, count in part["statements"].items():
            statements[name] = statements.get(name, 0) + count
        for passes in part["pass_ms"].values():
            reclaim_passes += passes.get("reclaim", [])
            wake_passes += passes.get("wake", [])
        held.update(part["held"])
    per_interval = {name: ms / MEASURED_TICKS for name, ms in statement_ms.items()}
    return {
        "engines": engines,
        "intervals": MEASURED_TICKS,
        "per_interval_ms": {name: round(ms, 1) for name, ms in sorted(per_interval.items())},
        "statements_per_interval": {
            name: round(count / MEASURED_TICKS, 1) for name, count in sorted(statements.items())
        },
        "passes_ms": per_interval.get("reclaim", 0.0) + per_interval.get("wake", 0.0),
        "database_active_ms": round(active_ms / MEASURED_TICKS, 1),
        "reclaim_passes": len(reclaim_passes),
        "wake_passes": len(wake_passes),
        "busiest_reclaim_ms": round(max(reclaim_passes, default=0.0), 1),
        "median_reclaim_ms": round(statistics.median(reclaim_passes or [0.0]), 1),
        "busiest_wake_ms": round(max(wake_passes, default=0.0), 1),
        "held": sum(held.values()),
        "reclaimed": sum(part["reclaimed"] for part in gathered),
    }


def _measure(engines: int) -> dict[str, dict[str, Any]]:
    timing = ClaimTiming(renew_interval_ms=INTERVAL_MS)
    clear()
    _forget_engines()
    seed(
        Layout(
            total=TOTAL,
            now_ms=int(time.time() * 1000),
            ttl_ms=timing.ttl_ms,
            renew_interval_ms=timing.renew_interval_ms,
            held=TOTAL,
            live_engines=engines,
            sessions=True,
        )
    )
    measured = {}
    for variant in VARIANTS:
        measured[variant] = _run_fleet(engines, legacy=variant == "before")
        _forget_engines()
    return measured


def run(*, binding: bool) -> tuple[dict[str, Any], Section, list[Target]]:
    title = f"FLEET DISCOVERY AT {TOTAL:,} HELD, NOTHING STRANDED  per {INTERVAL_MS:,} ms interval"
    if connection.vendor != "postgresql":
        section = Section(title, ("skipped",))
        section.notes.append("PostgreSQL only: it reads the database's own active time")
        return {"skipped": "PostgreSQL only"}, section, []
    by_count = {engines: _measure(engines) for engines in ENGINE_COUNTS}
    section = Section(
        title,
        ("engines", *(f"{n} {variant}" for n in ENGINE_COUNTS for variant in VARIANTS)),
    )

    def row(label: str, value: Any) -> None:
        section.rows.append(
            (label, *(value(by_count[n][variant]) for n in ENGINE_COUNTS for variant in VARIANTS))
        )

    row("reclaim + wake passes, ms per interval", lambda m: fmt(m["passes_ms"]))
    row("  reclaim", lambda m: fmt(m["per_interval_ms"].get("reclaim", 0.0)))
    row("  wake", lambda m: fmt(m["per_interval_ms"].get("wake", 0.0)))
    row(
        "heartbeats after the passes, ms", lambda m: fmt(m["per_interval_ms"].get("heartbeat", 0.0))
    )
    row("renew passes, ms", lambda m: fmt(m["per_interval_ms"].get("renew", 0.0)))
    row("database active time, ms per interval", lambda m: fmt(m["database_active_ms"]))
    row("busiest reclaim pass, ms", lambda m: fmt(m["busiest_reclaim_ms"]))
    row("median reclaim pass, ms", lambda m: fmt(m["median_reclaim_ms"]))
    row("busiest wake pass, ms", lambda m: fmt(m["busiest_wake_ms"]))
    row("reclaim passes run (expected engines x intervals)", lambda m: str(m["reclaim_passes"]))
    section.notes.append(
        f"{MEASURED_TICKS} measured intervals after {WARMUP_TICKS} of warm-up; statement "
        "time is timed by the engine that sent it (an upper bound of the database's share); "
        "database active time counts every backend of the benchmark's database"
    )
    failures = []
    for n in ENGINE_COUNTS:
        for variant in VARIANTS:
            measured = by_count[n][variant]
            if measured["reclaimed"]:
                failures.append(f"{n} {variant}: took over {measured['reclaimed']} claims")
            if measured["held"] != TOTAL:
                failures.append(f"{n} {variant}: engines held {measured['held']:,}")
    if failures:
        section.notes.append("FAILURES: " + "; ".join(failures))
    fewest, most = by_count[ENGINE_COUNTS[0]]["now"], by_count[ENGINE_COUNTS[-1]]["now"]
    targets = [
        Target(
            "discovery.fleet_ms",
            f"reclaim + wake of {ENGINE_COUNTS[-1]} engines per interval, {TOTAL:,} held",
            most["passes_ms"],
            FLEET_TARGET_MS,
            "ms",
            binding,
        ),
        Target(
            "discovery.fleet_growth",
            f"reclaim + wake per interval, {ENGINE_COUNTS[-1]} engines over {ENGINE_COUNTS[0]}",
            most["passes_ms"] / max(fewest["passes_ms"], 0.001),
            GROWTH_TARGET,
            "x",
            binding,
        ),
    ]
    data = {
        "total": TOTAL,
        "interval_ms": INTERVAL_MS,
        "by_engines": {str(n): by_count[n] for n in ENGINE_COUNTS},
        "failures": failures,
    }
    return data, section, targets
