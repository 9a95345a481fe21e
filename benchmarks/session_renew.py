"""Renew pass, both ownership modes side by side: one engine holding 1,000, 10,000 and
100,000 claims. The workflow-lease pass writes every claim; the engine-lease pass writes the
engine's session row alone, so its time, statements and WAL must not grow with the claims
held (docs/design.md §12)."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext

from claims.models import ClaimEvent, EngineSession, WorkflowClaim
from claims.protocol import (
    ClaimMetrics,
    ClaimRegistry,
    ClaimTiming,
    Liveness,
    PerClaimLeases,
    SessionLeases,
    run_renew_pass,
)
from claims.protocol.session_lease import EngineSessionLease
from claims.protocol.testing import FakeClock
from claims.store import OrmClaimStore

from .report import Section, Target, Timing, fmt, ratio
from .setup import analyze, delete_rows, settle_writes, timed_ms, wal_lsn

ENGINE = "bench-session"
START_MS = 1_700_000_000_000
SIZES = (1_000, 10_000, 100_000)
# A session pass takes a millisecond or two, so many repetitions cost nothing and steady
# its median; a workflow-lease pass over 100,000 claims takes seconds.
REPS = {"workflow-lease": 5, "engine-lease": 31}
SESSION_PASS_TARGET_MS = 5.0
# "Flat": the largest size's pass may cost at most this much more than the smallest's.
FLATNESS_TARGET = 1.5


def _registry(mode: str, clock: FakeClock, timing: ClaimTiming) -> ClaimRegistry:
    store = OrmClaimStore()
    liveness: Liveness = PerClaimLeases()
    if mode == "engine-lease":
        session = EngineSessionLease(store, engine_id=ENGINE, clock=clock, timing=timing)
        liveness = SessionLeases(session)
    return ClaimRegistry(
        store,
        engine_id=ENGINE,
        clock=clock,
        timing=timing,
        metrics=ClaimMetrics(),
        liveness=liveness,
    )


def _measure(mode: str, n: int) -> dict[str, Any]:
    for model in (WorkflowClaim, ClaimEvent, EngineSession):
        delete_rows(model)
    timing = ClaimTiming()
    clock = FakeClock(START_MS)
    registry = _registry(mode, clock, timing)
    granted = registry.acquire_many([f"sr-{i:07d}" for i in range(n)])
    if sum(result.status == "acquired" for result in granted.values()) != n:
        raise RuntimeError(f"{mode}: could not acquire {n} claims")
    analyze()
    settle_writes()
    failures: list[str] = []

    def one_pass() -> Any:
        clock.advance(timing.renew_interval_ms)
        result = run_renew_pass(registry)
        if result.renewed_count != n:
            failures.append(f"{mode} pass renewed {result.renewed_count} of {n}")
        return result

    with CaptureQueriesContext(connection) as queries:
        one_pass()
    before = wal_lsn()
    one_pass()
    after = wal_lsn()
    samples = [timed_ms(one_pass)[0] for _ in range(REPS[mode])]
    return {
        "n": n,
        "mode": mode,
        "timing": Timing(tuple(samples)),
        "statements": len(queries.captured_queries),
        "wal_bytes": None if before is None or after is None else after - before,
        "failures": failures,
    }


def _wal_text(value: int | None) -> str:
    return "n/a" if value is None else f"{value:,}"


def run(*, binding: bool) -> tuple[dict[str, Any], Section, list[Target]]:
    measured = {
        # The engine-lease pass first at each size: the other leaves dead rows behind.
        (mode, n): _measure(mode, n)
        for n in SIZES
        for mode in ("engine-lease", "workflow-lease")
    }
    section = Section(
        "RENEW PASS BY OWNERSHIP MODE  one engine, median of "
        f"{REPS['workflow-lease']} (workflow-lease) and {REPS['engine-lease']} (engine-lease) "
        "passes after 1 warm-up",
        (
            "claims held",
            "workflow-lease ms",
            "stmts",
            "WAL bytes",
            "engine-lease ms",
            "stmts",
            "WAL bytes",
            "engine/workflow",
        ),
    )
    for n in SIZES:
        per_claim, session = measured[("workflow-lease", n)], measured[("engine-lease", n)]
        section.rows.append(
            (
                f"{n:,}",
                fmt(per_claim["timing"].median),
                str(per_claim["statements"]),
                _wal_text(per_claim["wal_bytes"]),
                fmt(session["timing"].median),
                str(session["statements"]),
                _wal_text(session["wal_bytes"]),
                ratio(session["timing"].median / per_claim["timing"].median),
            )
        )
    section.notes.append(
        "WAL bytes: pg_current_wal_insert_lsn() before and after one pass (PostgreSQL only)"
    )
    failures = sorted({f for data in measured.values() for f in data["failures"]})
    if failures:
        section.notes.append("FAILURES: " + "; ".join(failures))

    def session_median(n: int) -> float:
        timing: Timing = measured[("engine-lease", n)]["timing"]
        return timing.median

    targets: list[Target] = []
    for n in SIZES:
        targets.append(
            Target(
                f"session_renew{n}.ms",
                f"engine-lease renew pass, {n:,} claims",
                session_median(n),
                SESSION_PASS_TARGET_MS,
                "ms",
                binding,
            )
        )
        targets.append(
            Target(
                f"session_renew{n}.statements",
                f"engine-lease renew pass, {n:,} claims: SQL statements",
                measured[("engine-lease", n)]["statements"],
                1,
                "statements",
                binding,
            )
        )
    flatness = session_median(SIZES[-1]) / session_median(SIZES[0])
    targets.append(
        Target(
            "session_renew.flatness",
            f"engine-lease renew pass, {SIZES[-1]:,} vs {SIZES[0]:,} claims",
            flatness,
            FLATNESS_TARGET,
            "x",
            binding,
        )
    )
    data = {
        "sizes": list(SIZES),
        "reps": REPS,
        "modes": {
            f"{mode}/{n}": {
                **value["timing"].as_json(),
                "statements": value["statements"],
                "wal_bytes": value["wal_bytes"],
            }
            for (mode, n), value in measured.items()
        },
        "flatness": round(flatness, 3),
        "failures": failures,
    }
    return data, section, targets
