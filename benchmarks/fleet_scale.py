"""The fleet at a million, both ownership modes side by side: 1,000,000 running workflows
held by 50 engines, 99 % of them parked (docs/design.md §12).

Per renew interval, the whole fleet's row writes and WAL bytes (``pg_current_wal_insert_lsn``
before and after): every engine's renew pass, plus one checkpoint of each executing
workflow (1 %, 10,000: an UPDATE of its state, as the runtime writes it).

- engine-lease: measured in full: the 50 engines renew their sessions (the real
  statement, ``EngineSessionLease.renew``), then the 10,000 checkpoints.
- workflow-lease: one engine's share measured with the real renew pass (20,000 claims),
  times 50 engines, plus the same checkpoints measured in this run: a full pass of 1,000,000
  claims would take minutes per interval on this machine. The rows marked "x 50" are that
  extrapolation.

And the reclaim pass with nothing stranded, by a 51st engine over each mode's fleet: the
engine's own ``run_reclaim_pass``, median of REPS passes. And one engine's wake pass with
nothing due (its 20,000 workflows parked for a day): the driver's own query through the
due-time index, beside the read it replaced (the park of every held workflow, by id, 5,000
ids a statement), median of REPS each.
"""

from __future__ import annotations

import statistics
from typing import Any

from django.db import connection

from claims.models import Workflow, WorkflowClaim, WorkflowStatus
from claims.protocol import (
    ClaimMetrics,
    ClaimRegistry,
    ClaimTiming,
    ReclaimTarget,
    SessionLeases,
    run_reclaim_pass,
    run_renew_pass,
)
from claims.protocol.session_lease import EngineSessionLease
from claims.protocol.testing import FakeClock
from claims.runtime import WorkflowDriver
from claims.store import OrmClaimStore
from claims.workflow_types import is_type_registered

from .pool import reclaim_pool
from .reclaim import SourceTimedStore
from .report import Section, Target, Timing, fmt
from .seed import Layout, clear, seed
from .setup import settle_writes, timed_ms, wal_lsn

START_MS = 1_700_000_000_000
TOTAL = 1_000_000
ENGINES = 50
EXECUTING_SHARE = 100  # one workflow in a hundred is executing; the rest are parked
ONE_ENGINE_SHARE = TOTAL // ENGINES
RECLAIMER = "bench-fleet-reclaimer"
PER_CLAIM_ENGINE = "bench-fleet-per-claim"
REPS = 5
RECLAIM_TARGET_MS = 80.0  # the workflow-lease mode's pass at 1,000,000 (BENCHMARKS.md)
CHECKPOINT_BATCH = 1_000
WAKE_ENGINE = "bench-live-0"  # a seeded engine: 1 of 50, 20,000 held workflows
WAKE_BEFORE_CHUNK = 5_000


def _layout(sessions: bool) -> Layout:
    timing = ClaimTiming()
    return Layout(
        total=TOTAL,
        now_ms=START_MS,
        ttl_ms=timing.ttl_ms,
        renew_interval_ms=timing.renew_interval_ms,
        held=TOTAL,
        live_engines=ENGINES,
        sessions=sessions,
    )


def _executing_ids() -> list[str]:
    return list(
        Workflow.objects.order_by("workflow_id").values_list("workflow_id", flat=True)[
            ::EXECUTING_SHARE
        ]
    )


def _checkpoints(ids: list[str], at_ms: int) -> int:
    """One checkpoint per executing workflow: its state and time rewritten, one UPDATE
    each (the runtime's fenced write); returns the rows written."""
    table = connection.ops.quote_name(Workflow._meta.db_table)
    written = 0
    with connection.cursor() as cursor:
        for start in range(0, len(ids), CHECKPOINT_BATCH):
            chunk = ids[start : start + CHECKPOINT_BATCH]
            cursor.executemany(
                f"UPDATE {table} SET updated_at_ms = %s, state = state WHERE workflow_id = %s",
                [(at_ms, workflow_id) for workflow_id in chunk],
            )
            written += len(chunk)
    return written


def _steady_checkpoints(ids: list[str], clock: FakeClock) -> tuple[int, float, int]:
    """The executing workflows' checkpoints of one interval, measured after a warm-up
    interval: the first write of a page after a database checkpoint logs the whole page,
    a cost every interval does not pay (both modes are measured the same way)."""
    _checkpoints(ids, clock())
    clock.advance(ClaimTiming().renew_interval_ms)
    return _wal_of(lambda: _checkpoints(ids, clock()))


def _wal_of(fn: Any) -> tuple[int, float, Any]:
    before = wal_lsn()
    elapsed, result = timed_ms(fn)
    after = wal_lsn()
    # This part runs on PostgreSQL only, where the position is always known.
    assert before is not None
    assert after is not None
    return after - before, elapsed, result


def _reclaim_pass_ms(registry: ClaimRegistry) -> tuple[Timing, list[int], dict[str, float]]:
    """The median pass, how many it reclaimed each time, and the median of each discovery
    source (the registry's store must be a SourceTimedStore)."""
    target = ReclaimTarget(
        registry,
        registry.store,
        metrics=ClaimMetrics(),
        on_reclaimed=lambda workflow_id: None,
        is_type_registered=is_type_registered,
    )
    samples, reclaimed = [], []
    with reclaim_pool() as pool:
        run_reclaim_pass(target, executor=pool)  # warm-up
        for _ in range(REPS):
            elapsed, result = timed_ms(lambda: run_reclaim_pass(target, executor=pool))
            samples.append(elapsed)
            reclaimed.append(result.reclaimed_count)
    store = registry.store
    assert isinstance(store, SourceTimedStore)
    sources = {
        name: round(statistics.median(kept[1:] or kept), 1)
        for name, kept in store.source_ms.items()
        if kept
    }
    return Timing(tuple(samples)), reclaimed, sources


def _wake_by_held_ids(held: list[str], now_ms: int) -> list[str]:
    """The wake pass's read before the due-time index: every held workflow's park, by id."""
    wake_at: dict[str, Any] = {}
    for start in range(0, len(held), WAKE_BEFORE_CHUNK):
        wake_at.update(
            Workflow.objects.filter(
                workflow_id__in=held[start : start + WAKE_BEFORE_CHUNK],
                status=WorkflowStatus.RUNNING,
            ).values_list("workflow_id", "state__park__wake_at_ms")
        )
    return [wf for wf in held if not isinstance(wake_at.get(wf), int) or wake_at[wf] <= now_ms]


def _wake_pass_ms(clock: FakeClock) -> dict[str, Any]:
    """One seeded engine's wake query, now and before, with nothing due (median of REPS)."""
    held = sorted(
        WorkflowClaim.objects.filter(holder_engine_id=WAKE_ENGINE).values_list(
            "workflow_id", flat=True
        )
    )
    registry = ClaimRegistry(
        OrmClaimStore(), engine_id=WAKE_ENGINE, clock=clock, timing=ClaimTiming()
    )
    driver = WorkflowDriver(registry, clock=clock)
    now_ms = clock()
    due_now, due_before = driver.due_now(), _wake_by_held_ids(held, now_ms)  # warm-up
    now = [timed_ms(driver.due_now)[0] for _ in range(REPS)]
    before = [timed_ms(lambda: _wake_by_held_ids(held, now_ms))[0] for _ in range(REPS)]
    return {
        "held": len(held),
        "due": [len(due_now), len(due_before)],
        "index_ms": Timing(tuple(now)),
        "by_held_ids_ms": Timing(tuple(before)),
    }


def _engine_lease() -> dict[str, Any]:
    clear()
    seeded = seed(_layout(sessions=True))
    timing, clock = ClaimTiming(), FakeClock(START_MS)
    store = OrmClaimStore()
    sessions = [
        EngineSessionLease(store, engine_id=f"bench-live-{i}", clock=clock, timing=timing)
        for i in range(ENGINES)
    ]
    for session in sessions:
        if session.open().status != "opened" or session.epoch != 1:
            raise RuntimeError("the seeded claims name session 1 of each engine")
    executing = _executing_ids()
    settle_writes()
    clock.advance(timing.renew_interval_ms)
    renewals = [session.renew() for session in sessions]  # warm-up interval
    clock.advance(timing.renew_interval_ms)
    renew_wal, renew_ms, renewals = _wal_of(lambda: [session.renew() for session in sessions])
    renewed = sum(result.status == "renewed" for result in renewals)
    checkpoint_wal, checkpoint_ms, checkpoints = _steady_checkpoints(executing, clock)
    timed = SourceTimedStore()
    reclaimer = ClaimRegistry(
        timed,
        engine_id=RECLAIMER,
        clock=clock,
        timing=timing,
        liveness=SessionLeases(
            EngineSessionLease(timed, engine_id=RECLAIMER, clock=clock, timing=timing)
        ),
    )
    reclaim, reclaimed, sources = _reclaim_pass_ms(reclaimer)
    return {
        "seed": seeded,
        "renew": {"rows": renewed, "wal_bytes": renew_wal, "ms": round(renew_ms, 1)},
        "checkpoints": {"rows": checkpoints, "wal_bytes": checkpoint_wal},
        "checkpoint_ms": round(checkpoint_ms, 1),
        "reclaim": reclaim,
        "reclaimed": reclaimed,
        "reclaim_sources_ms": sources,
        "wake": _wake_pass_ms(clock),
        "held": WorkflowClaim.objects.filter(holder_session_epoch=1).count(),
    }


def _workflow_lease() -> dict[str, Any]:
    clear()
    seeded = seed(_layout(sessions=False))
    timing, clock = ClaimTiming(), FakeClock(START_MS)
    store = OrmClaimStore()
    # One engine's real share, granted through the protocol so its cache holds them.
    one = ClaimRegistry(store, engine_id=PER_CLAIM_ENGINE, clock=clock, timing=timing)
    granted = one.acquire_many([f"fs-{i:07d}" for i in range(ONE_ENGINE_SHARE)])
    if sum(result.status == "acquired" for result in granted.values()) != ONE_ENGINE_SHARE:
        raise RuntimeError("could not grant one engine's share")
    executing = _executing_ids()
    settle_writes()
    clock.advance(timing.renew_interval_ms)
    run_renew_pass(one)  # warm-up
    clock.advance(timing.renew_interval_ms)
    renew_wal, renew_ms, result = _wal_of(lambda: run_renew_pass(one))
    checkpoint_wal, checkpoint_ms, checkpoints = _steady_checkpoints(executing, clock)
    reclaimer = ClaimRegistry(SourceTimedStore(), engine_id=RECLAIMER, clock=clock, timing=timing)
    reclaim, reclaimed, sources = _reclaim_pass_ms(reclaimer)
    return {
        "seed": seeded,
        "renew_one_engine": {
            "rows": result.renewed_count,
            "wal_bytes": renew_wal,
            "ms": round(renew_ms, 1),
        },
        "renew": {
            "rows": result.renewed_count * ENGINES,
            "wal_bytes": renew_wal * ENGINES,
            "extrapolated": True,
        },
        "checkpoints": {"rows": checkpoints, "wal_bytes": checkpoint_wal},
        "checkpoint_ms": round(checkpoint_ms, 1),
        "reclaim": reclaim,
        "reclaimed": reclaimed,
        "reclaim_sources_ms": sources,
        "wake": _wake_pass_ms(clock),
    }


def _as_json(mode: dict[str, Any]) -> dict[str, Any]:
    wake = mode["wake"]
    return {
        **mode,
        "reclaim": mode["reclaim"].as_json(),
        "wake": {
            **wake,
            "index_ms": wake["index_ms"].as_json(),
            "by_held_ids_ms": wake["by_held_ids_ms"].as_json(),
        },
    }


def _mb(n: int) -> str:
    return f"{n / 1e6:,.2f} MB" if n >= 100_000 else f"{n:,} B"


def run(*, binding: bool) -> tuple[dict[str, Any], Section, list[Target]]:
    if connection.vendor != "postgresql":
        section = Section("FLEET AT 1,000,000 WORKFLOWS", ("skipped",))
        section.notes.append("PostgreSQL only: it measures WAL")
        return {"skipped": "PostgreSQL only"}, section, []
    session = _engine_lease()
    per_claim = _workflow_lease()
    section = Section(
        f"FLEET AT {TOTAL:,} RUNNING WORKFLOWS  {ENGINES} engines, 99 % parked, per renew interval",
        ("figure", "workflow-lease", "engine-lease"),
    )
    for label, key in (("renewals", "renew"), ("checkpoints (1 % executing)", "checkpoints")):
        section.rows.append(
            (
                f"{label}: row writes",
                f"{per_claim[key]['rows']:,}" + (" (x 50)" if key == "renew" else ""),
                f"{session[key]['rows']:,}",
            )
        )
        section.rows.append(
            (
                f"{label}: WAL",
                _mb(per_claim[key]["wal_bytes"]) + (" (x 50)" if key == "renew" else ""),
                _mb(session[key]["wal_bytes"]),
            )
        )
    total_rows = {
        name: data["renew"]["rows"] + data["checkpoints"]["rows"]
        for name, data in (("workflow", per_claim), ("session", session))
    }
    total_wal = {
        name: data["renew"]["wal_bytes"] + data["checkpoints"]["wal_bytes"]
        for name, data in (("workflow", per_claim), ("session", session))
    }
    section.rows.append(
        ("fleet total: row writes", f"{total_rows['workflow']:,}", f"{total_rows['session']:,}")
    )
    section.rows.append(("fleet total: WAL", _mb(total_wal["workflow"]), _mb(total_wal["session"])))
    section.rows.append(
        (
            "renewal time",
            f"{fmt(per_claim['renew_one_engine']['ms'])} ms per engine",
            f"{fmt(session['renew']['ms'])} ms, all 50",
        )
    )
    section.rows.append(
        (
            "reclaim pass, nothing stranded (median ms)",
            fmt(per_claim["reclaim"].median),
            fmt(session["reclaim"].median),
        )
    )
    for label, key in (
        ("wake pass of one engine, nothing due: due-time index (median ms)", "index_ms"),
        ("wake pass of one engine, before: every held workflow's park", "by_held_ids_ms"),
    ):
        section.rows.append(
            (label, fmt(per_claim["wake"][key].median), fmt(session["wake"][key].median))
        )
    section.notes.append(
        "reclaim discovery, median ms per source: workflow-lease "
        f"{per_claim['reclaim_sources_ms']}, engine-lease {session['reclaim_sources_ms']}"
    )
    section.notes.append(
        f"workflow-lease renewals: one engine's pass over its {ONE_ENGINE_SHARE:,} claims, "
        f"measured, x {ENGINES} engines (a full 1,000,000-claim interval is not run)"
    )
    failures = []
    if session["renew"]["rows"] != ENGINES:
        failures.append(f"{session['renew']['rows']} of {ENGINES} sessions renewed")
    if any(session["reclaimed"]) or any(per_claim["reclaimed"]):
        failures.append("a reclaim pass took something over in a fleet with nothing stranded")
    for name, data in (("workflow-lease", per_claim), ("engine-lease", session)):
        if data["wake"]["due"] != [0, 0]:
            failures.append(f"{name}: a wake pass found something due in a parked fleet")
    if failures:
        section.notes.append("FAILURES: " + "; ".join(failures))
    targets = [
        Target(
            "fleet.session_row_writes",
            f"engine-lease renewals per interval, {TOTAL:,} workflows over {ENGINES} engines",
            session["renew"]["rows"],
            ENGINES,
            "rows",
            binding,
        ),
        Target(
            "fleet.session_reclaim_ms",
            f"engine-lease reclaim pass, {TOTAL:,} workflows, nothing stranded",
            session["reclaim"].median,
            max(RECLAIM_TARGET_MS, per_claim["reclaim"].median),
            "ms",
            binding,
        ),
    ]
    data = {
        "total": TOTAL,
        "engines": ENGINES,
        "executing": session["checkpoints"]["rows"],
        "engine-lease": _as_json(session),
        "workflow-lease": _as_json(per_claim),
        "failures": failures,
    }
    return data, section, targets
