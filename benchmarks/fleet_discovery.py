"""The fleet's discovery with nothing stranded: 1,000,000 running workflows, all held, over
5, 20 and 50 engines, every engine running its real passes at once (docs/design.md §4).

Each engine is the product's ``LocalEngine`` in the engine-lease mode (the mode a fleet
this size runs: the workflow-lease mode would renew a million claims per interval), five
to a process (``discovery_child``), ticked together once per renew interval as beat ticks
them, for WARMUP_TICKS and then MEASURED_TICKS intervals, on a PostgreSQL server of the
benchmark's own (``private_postgres``: pg_stat_statements, and connections for fifty
engines). Per interval:

- the database's own time (pg_stat_statements) of every statement the fleet sent, by the
  pass that sent it: reclaim and wake with beat's reads for the fleet (a process of their
  own reads them at each tick, as ``fan_out_ticks`` does, and the ticks carry the shares),
  and apart from them renewal and the heartbeat each pass writes after it;
- the busiest engine's reclaim pass, wall time (its process shares two cores with the
  other engines).

"before": the same engines with discovery and wake as they were before this work (the
anti-join over every running workflow, the OR over every held claim, the park of every
held workflow by id, a scan page per engine per pass, a full audit each time, no beat
shares), on the same seed.
"""

from __future__ import annotations

import statistics
import time
from difflib import SequenceMatcher
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
from .engine_fleet import run_together, seed_held_sessions
from .private_postgres import private_server
from .report import Section, Target, fmt

TOTAL = 1_000_000
ENGINE_COUNTS = (5, 20, 50)
INTERVAL_MS = ClaimTiming().renew_interval_ms
WARMUP_TICKS = 2
MEASURED_TICKS = 10
FLEET_TARGET_MS = 250.0  # reclaim and wake of the whole fleet, per interval, at 50 engines
GROWTH_TARGET = 1.5  # from the fewest engines to the most
VARIANTS = ("now", "before")
SAME_TEXT_RATIO = 0.9


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


def reset_statements() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_statements_reset()")


def statement_times() -> list[tuple[str, int, float]]:
    """Every statement the database ran since the reset: text, calls, total ms."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT query, calls, total_exec_time FROM pg_stat_statements"
            " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " AND query NOT LIKE '%%pg_stat_statements%%'"
        )
        return [(query, int(calls), float(ms)) for query, calls, ms in cursor.fetchall()]


def _run_fleet(engines: int, *, legacy: bool) -> dict[str, Any]:
    interval_s = INTERVAL_MS / 1000

    def window(t0: float) -> list[tuple[str, int, float]]:
        # The window the engines time their statements in, read from the database too.
        time.sleep(max(0.0, t0 + WARMUP_TICKS * interval_s - 0.05 - time.time()))
        reset_statements()
        time.sleep(max(0.0, t0 + (WARMUP_TICKS + MEASURED_TICKS) * interval_s - time.time()))
        return statement_times()

    gathered, statements = run_together(
        [f"bench-live-{i}" for i in range(engines)],
        interval_ms=INTERVAL_MS,
        warmup_ticks=WARMUP_TICKS,
        measured_ticks=MEASURED_TICKS,
        legacy=legacy,
        watch=window,
    )
    return _summary(gathered, engines, statements)


def _closest(text: str, sent: dict[str, Any]) -> str:
    """``text`` if an engine sent it; else the text sent most like it, if nearly the same
    (the server writes some values its own way: a negative number, NULL, a date part)."""
    if text in sent:
        return text
    best = max(sent, key=lambda other: SequenceMatcher(None, text, other).ratio(), default="")
    return best if best and SequenceMatcher(None, text, best).ratio() >= SAME_TEXT_RATIO else text


def _database_ms(
    gathered: list[dict[str, Any]], statements: list[tuple[str, int, float]]
) -> tuple[dict[str, float], list[tuple[float, str]]]:
    """The database's own time by the pass that sent each statement (a text sent by more
    than one pass is split between them by the calls each made), and the costliest texts
    no pass sent through a cursor."""
    senders: dict[str, dict[str, int]] = {}
    unmatched: list[tuple[float, str]] = []
    for part in gathered:
        for text, counts in part["texts"].items():
            mine = senders.setdefault(text, {})
            for category, count in counts.items():
                mine[category] = mine.get(category, 0) + count
    by_category: dict[str, float] = {}
    for query, _, ms in statements:
        counts = senders.get(_closest(discovery_child.normalized(query), senders))
        if not counts:
            # Transaction control (BEGIN, COMMIT: the driver's, not a cursor's) and a new
            # connection's settings: no pass is named by the statement itself.
            by_category["unattributed"] = by_category.get("unattributed", 0.0) + ms
            unmatched.append((round(ms, 1), query[:120]))
            continue
        total = sum(counts.values())
        for category, count in counts.items():
            by_category[category] = by_category.get(category, 0.0) + ms * count / total
    return by_category, sorted(unmatched, reverse=True)[:8]


def _summary(
    gathered: list[dict[str, Any]], engines: int, statements: list[tuple[str, int, float]]
) -> dict[str, Any]:
    client_ms: dict[str, float] = {}
    reclaim_passes: list[float] = []
    wake_passes: list[float] = []
    held: dict[str, int] = {}
    beat_reads: list[float] = []
    for part in gathered:
        for name, ms in part["statement_ms"].items():
            client_ms[name] = client_ms.get(name, 0.0) + ms
        for passes in part["pass_ms"].values():
            reclaim_passes += passes.get("reclaim", [])
            beat_reads += passes.get("beat", [])
            wake_passes += passes.get("wake", [])
        held.update(part["held"])
    by_category, unmatched = _database_ms(gathered, statements)
    database = {name: round(ms / MEASURED_TICKS, 1) for name, ms in sorted(by_category.items())}
    return {
        "engines": engines,
        "intervals": MEASURED_TICKS,
        "database_ms": database,
        "database_total_ms": round(sum(database.values()), 1),
        "unattributed_top": unmatched,
        "costliest_statements": [
            (round(ms / MEASURED_TICKS, 1), round(calls / MEASURED_TICKS, 1), query[:160])
            for query, calls, ms in sorted(statements, key=lambda s: -s[2])[:12]
        ],
        "statements_per_interval": round(
            sum(calls for _, calls, _ in statements) / MEASURED_TICKS, 1
        ),
        # Beat's reads for the fleet are the passes' reads, done once: counted with them.
        "passes_ms": round(
            database.get("reclaim", 0.0) + database.get("wake", 0.0) + database.get("beat", 0.0),
            1,
        ),
        "beat_read_ms": round(statistics.median(beat_reads or [0.0]), 1),
        "client_ms": {
            name: round(ms / MEASURED_TICKS, 1) for name, ms in sorted(client_ms.items())
        },
        "reclaim_passes": len(reclaim_passes),
        "wake_passes": len(wake_passes),
        "busiest_reclaim_ms": round(max(reclaim_passes, default=0.0), 1),
        "median_reclaim_ms": round(statistics.median(reclaim_passes or [0.0]), 1),
        "busiest_wake_ms": round(max(wake_passes, default=0.0), 1),
        "held": sum(held.values()),
        "reclaimed": sum(sum(part["reclaimed_by"].values()) for part in gathered),
    }


def _measure(engines: int) -> dict[str, dict[str, Any]]:
    _forget_engines()
    seed_held_sessions(TOTAL, engines, ClaimTiming(renew_interval_ms=INTERVAL_MS))
    measured = {}
    for variant in VARIANTS:
        measured[variant] = _run_fleet(engines, legacy=variant == "before")
        _forget_engines()
    return measured


def run(*, binding: bool) -> tuple[dict[str, Any], Section, list[Target]]:
    title = f"FLEET DISCOVERY AT {TOTAL:,} HELD, NOTHING STRANDED  per {INTERVAL_MS:,} ms interval"
    if connection.vendor != "postgresql":
        section = Section(title, ("skipped",))
        section.notes.append("PostgreSQL only: it reads pg_stat_statements")
        return {"skipped": "PostgreSQL only"}, section, []
    with private_server():
        by_count = {engines: _measure(engines) for engines in ENGINE_COUNTS}
    section = Section(
        title,
        ("engines", *(f"{n} {variant}" for n in ENGINE_COUNTS for variant in VARIANTS)),
    )

    def row(label: str, value: Any) -> None:
        section.rows.append(
            (label, *(value(by_count[n][variant]) for n in ENGINE_COUNTS for variant in VARIANTS))
        )

    row("reclaim + wake, database ms per interval", lambda m: fmt(m["passes_ms"]))
    for name, label in (
        ("beat", "  beat's reads for the fleet"),
        ("reclaim", "  reclaim passes"),
        ("wake", "  wake passes"),
        ("heartbeat", "heartbeats after the passes"),
        ("renew", "renew passes"),
        ("unattributed", "not matched to a pass"),
    ):
        row(label, lambda m, name=name: fmt(m["database_ms"].get(name, 0.0)))
    row("all statements, database ms per interval", lambda m: fmt(m["database_total_ms"]))
    row("statements per interval", lambda m: f"{m['statements_per_interval']:,.0f}")
    row("busiest reclaim pass, ms (wall)", lambda m: fmt(m["busiest_reclaim_ms"]))
    row("median reclaim pass, ms (wall)", lambda m: fmt(m["median_reclaim_ms"]))
    row("busiest wake pass, ms (wall)", lambda m: fmt(m["busiest_wake_ms"]))
    row("beat's reads, median ms (wall)", lambda m: fmt(m["beat_read_ms"]))
    row("reclaim passes run", lambda m: f"{m['reclaim_passes']:,}")
    section.notes.append(
        f"{MEASURED_TICKS} measured intervals after {WARMUP_TICKS} of warm-up, on a private "
        "PostgreSQL server with the shared one's settings; database time from "
        "pg_stat_statements, each statement given to the pass that sent it"
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
