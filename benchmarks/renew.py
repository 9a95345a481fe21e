"""Renew pass: run_renew_pass over N held claims against one hand-written batched UPDATE."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext

from claims.models import ClaimEvent, WorkflowClaim
from claims.protocol import ClaimMetrics, ClaimRegistry, ClaimTiming, Holder, run_renew_pass
from claims.protocol.testing import FakeClock
from claims.store import OrmClaimStore

from .report import Section, Target, Timing, fmt, ratio
from .setup import analyze, delete_rows, timed_ms

ENGINE = "bench-a"
START_MS = 1_700_000_000_000
REPS = 5
RATIO_TARGET = 2.5
STATEMENTS_PER_CHUNK = 5_000

# The anchors' UNNEST statement (B.c): one round trip, per-row epoch check, ids returned.
_BASELINE_POSTGRES = (
    "UPDATE {table} c SET holder_expires_at_ms=%s "
    "FROM unnest(%s::text[], %s::bigint[]) u(wid, ep) "
    "WHERE c.workflow_id=u.wid AND c.epoch=u.ep AND c.holder_engine_id=%s "
    "RETURNING c.workflow_id"
)


class TimedStore(OrmClaimStore):
    """OrmClaimStore, noting how long its set-based renewal (parameters + SQL) took."""

    renew_many_ms: float = 0.0

    def renew_many(self, held: Sequence[tuple[str, Holder]], *, expires_at_ms: int) -> set[str]:
        started = time.perf_counter()
        try:
            return super().renew_many(held, expires_at_ms=expires_at_ms)
        finally:
            self.renew_many_ms += (time.perf_counter() - started) * 1_000


def _baseline(ids: list[str], epochs: list[int], expires_at_ms: int) -> int:
    """The hand-written batched UPDATE; returns how many rows it renewed."""
    if connection.vendor == "postgresql":
        table = connection.ops.quote_name(WorkflowClaim._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(
                _BASELINE_POSTGRES.format(table=table), [expires_at_ms, ids, epochs, ENGINE]
            )
            return len(cursor.fetchall())
    return WorkflowClaim.objects.filter(holder_engine_id=ENGINE, workflow_id__in=ids).update(
        holder_expires_at_ms=expires_at_ms
    )


def _arrange(
    n: int, clock: FakeClock, timing: ClaimTiming
) -> tuple[ClaimRegistry, TimedStore, list[str], dict[str, Any]]:
    delete_rows(WorkflowClaim)
    delete_rows(ClaimEvent)
    ids = [f"rn-{i:07d}" for i in range(n)]
    store = TimedStore()
    registry = ClaimRegistry(
        store, engine_id=ENGINE, clock=clock, timing=timing, metrics=ClaimMetrics()
    )
    # The engine's own way to take many claims at once: one read, then set-based
    # inserts (5,000 rows a statement) with their "acquired" events.
    started = time.perf_counter()
    granted = registry.acquire_many(ids)
    acquire_s = time.perf_counter() - started
    acquired = sum(result.status == "acquired" for result in granted.values())
    if acquired != n:
        raise RuntimeError(f"acquired {acquired} of {n}")
    analyzed = analyze()
    return registry, store, ids, {"acquire_s": acquire_s, "analyzed": analyzed}


def run(n: int, *, binding: bool) -> tuple[dict[str, Any], Section, list[Target]]:
    timing = ClaimTiming()
    clock = FakeClock(START_MS)
    registry, store, ids, setup = _arrange(n, clock, timing)
    store_ms: list[float] = []
    epochs = [1] * n
    metrics = ClaimMetrics()
    last_expires = START_MS + timing.ttl_ms
    failures: list[str] = []

    def one_pass() -> float:
        nonlocal last_expires
        clock.advance(timing.renew_interval_ms)
        store.renew_many_ms = 0.0
        elapsed, result = timed_ms(lambda: run_renew_pass(registry, metrics))
        store_ms.append(store.renew_many_ms)
        if result.renewed_count != n:
            failures.append(f"pass renewed {result.renewed_count} of {n}")
        last_expires = clock() + timing.ttl_ms
        return elapsed

    def one_baseline() -> float:
        # It writes the expiry the last pass cached, so the registry's CAS still matches;
        # both databases write a new row version whether or not the value changes.
        elapsed, count = timed_ms(lambda: _baseline(ids, epochs, last_expires))
        if count != n:
            failures.append(f"baseline renewed {count} of {n}")
        return elapsed

    # Warm-up, which also counts the statements (counting is kept out of the timed reps).
    with CaptureQueriesContext(connection) as pass_queries:
        one_pass()
    with CaptureQueriesContext(connection) as baseline_queries:
        one_baseline()
    statements = len(pass_queries.captured_queries)
    store_ms.clear()

    pass_ms: list[float] = []
    baseline_ms: list[float] = []
    for rep in range(REPS):
        if rep % 2 == 0:
            pass_ms.append(one_pass())
            baseline_ms.append(one_baseline())
        else:
            baseline_ms.append(one_baseline())
            pass_ms.append(one_pass())
    ours, base = Timing(tuple(pass_ms)), Timing(tuple(baseline_ms))
    in_store = Timing(tuple(store_ms))
    in_python = Timing(tuple(p - s for p, s in zip(pass_ms, store_ms, strict=True)))
    pass_ratio = ours.median / base.median
    statement_limit = math.ceil(n / STATEMENTS_PER_CHUNK) + 1
    baseline_name = (
        "UNNEST UPDATE (raw cursor)" if connection.vendor == "postgresql" else "ORM __in .update()"
    )

    section = Section(
        f"RENEW PASS  N={n:,} claims held by {ENGINE}  "
        f"(median of {REPS} after 1 warm-up, alternating)",
        ("", "median ms", "min-max", "vs baseline", "target", "statements", "limit"),
    )
    section.rows.append(
        (f"baseline: {baseline_name}", fmt(base.median), base.spread(), "1.00x", "", "1", "")
    )
    section.rows.append(
        (
            "run_renew_pass (ours)",
            fmt(ours.median),
            ours.spread(),
            ratio(pass_ratio),
            f"<= {RATIO_TARGET}x",
            str(statements),
            f"<= {statement_limit}",
        )
    )
    for label, part in (
        ("  of which store.renew_many", in_store),
        ("  of which registry + pass", in_python),
    ):
        share = ratio(part.median / base.median)
        section.rows.append((label, fmt(part.median), part.spread(), share, "", "", ""))
    section.notes.append(
        f"setup: registry.acquire_many of {n:,} new ids {setup['acquire_s']:.1f} s"
        + ("; ANALYZE after load" if setup["analyzed"] else "")
    )
    section.notes.append(
        "the baseline conditions on epoch+engine only; the pass on epoch and all five "
        "holder columns, one array each, and keeps per-id outcomes; store.renew_many = "
        "building its parameters + the SQL round trips; registry + pass = everything else "
        "(per-id bookkeeping in Python)"
    )
    if failures:
        section.notes.append("FAILURES: " + "; ".join(sorted(set(failures))))

    key = f"renew{n}"
    targets = [
        Target(
            f"{key}.ratio",
            f"renew pass {n:,}: time vs batched UPDATE",
            pass_ratio,
            RATIO_TARGET,
            "x",
            binding,
        ),
        Target(
            f"{key}.statements",
            f"renew pass {n:,}: SQL statements",
            statements,
            statement_limit,
            "statements",
            binding,
        ),
    ]
    data = {
        "n": n,
        "reps": REPS,
        "baseline": {"name": baseline_name, **base.as_json()},
        "pass": ours.as_json(),
        "pass_in_store_renew_many": in_store.as_json(),
        "pass_in_registry_and_pass": in_python.as_json(),
        "ratio": round(pass_ratio, 3),
        "statements": statements,
        "statement_limit": statement_limit,
        "statements_sql": [q["sql"][:160] for q in pass_queries.captured_queries],
        "baseline_statements": len(baseline_queries.captured_queries),
        "setup": setup,
        "failures": sorted(set(failures)),
    }
    return data, section, targets
