"""Single-claim calls: OrmClaimStore against the very statements it sends, issued raw.

The sides (``micro_sides``) take turns in blocks of BLOCK operations, in a shuffled
order each round, so load from elsewhere on the machine falls on all of them alike;
the ratio of the store to the raw statements is then what the store adds. On
PostgreSQL the single-claim locks teams pick instead (``micro_alternatives``) join
the acquire and renew rounds.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Sequence
from typing import Any

from django.db import connection

from claims.models import ClaimEvent, WorkflowClaim
from claims.protocol import ClaimTiming
from claims.protocol.testing import FakeClock

from . import micro_sides
from .micro_alternatives import LACKS, AdvisorySide, RedisSide, ServiceUnavailable
from .micro_sides import START_MS, RawSide, RegistrySide, Side, StoreSide, dead_holder
from .report import Section, Target
from .setup import bulk_insert

BLOCK = 100
RATIO_TARGET = 1.5
OPERATIONS = ("acquire", "renew", "release", "takeover", "read")
BINDING_OPERATIONS = ("acquire", "renew", "release", "takeover")
# Anchors P1 T4/T5, PostgreSQL: p50 of one renew, and of one acquire or takeover, via our API.
API_P50_US = {"acquire": 1_500, "renew": 800, "takeover": 1_500}


def _measure(sides: Sequence[Side], op: str, clock: FakeClock) -> list[str]:
    """Blocks of BLOCK ops per side, in a fresh order each round; the first WARMUP ops are
    not kept. A shuffled order (seeded, so runs compare) keeps interference that comes and
    goes on a fixed period from landing on the same side every time, as a rotation can."""
    sides = [side for side in sides if op in side.operations]
    order = random.Random(f"micro-{op}")
    problems = []
    warmup = micro_sides.WARMUP
    for start in range(0, warmup + micro_sides.OPS, BLOCK):
        for side in order.sample(sides, len(sides)):
            fn = side.op
            for workflow_id in side.ids[start : start + BLOCK]:
                began = time.perf_counter_ns()
                ok = fn(op, workflow_id)
                elapsed = time.perf_counter_ns() - began
                if not ok:
                    problems.append(f"{side.name} {op} {workflow_id}")
                if start >= warmup:
                    side.samples[op].append(elapsed / 1_000)
        clock.advance(1)
    return problems


def _alternatives(timing: ClaimTiming) -> tuple[list[Side], list[str]]:
    """The advisory-lock and Redis sides (PostgreSQL runs only), and notes on any skipped."""
    if connection.vendor != "postgresql":
        return [], ["Redis and advisory-lock comparisons run on PostgreSQL only"]
    sides: list[Side] = [AdvisorySide()]
    try:
        sides.append(RedisSide(timing))
    except ServiceUnavailable as error:
        if os.environ.get("WEFTBOARD_REQUIRE_SERVICES", "").strip() == "1":
            sides[0].close()
            raise SystemExit(
                f"benchmarks: Redis is required (WEFTBOARD_REQUIRE_SERVICES=1) "
                f"but unreachable: {error}"
            ) from error
        print(f"micro: Redis comparison skipped, unreachable: {error}", flush=True)
        return sides, [f"Redis comparison skipped, unreachable: {error}"]
    return sides, []


def _settle() -> None:
    """Vacuum and analyze the claim and event tables between rounds (PostgreSQL), so
    autovacuum, woken by the previous round's updates, does not run during the next."""
    if connection.vendor != "postgresql":
        return
    tables = ", ".join(
        connection.ops.quote_name(model._meta.db_table) for model in (WorkflowClaim, ClaimEvent)
    )
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM (ANALYZE) {tables}")


def _hand_to_dead_engine(ids: list[str]) -> None:
    dead = dead_holder()
    WorkflowClaim.objects.filter(workflow_id__in=ids).update(
        epoch=2,
        holder_engine_id=dead.engine_id,
        holder_epoch=dead.epoch,
        holder_expires_at_ms=dead.expires_at_ms,
        holder_claimed_at_ms=dead.claimed_at_ms,
    )


def _same_statements(store: StoreSide, raw: RawSide) -> list[str]:
    """The operations whose first call sent different statements (text or values)."""
    differ = []
    for op in OPERATIONS:
        sent_raw = [sql.replace("ms-r-", "ms-s-") for sql in raw.sent.get(op, [])]
        if not sent_raw or sent_raw != store.sent.get(op):
            differ.append(op)
    return differ


def _p(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _ops_per_s(samples: list[float]) -> float:
    return len(samples) / (sum(samples) / 1_000_000)


def run(*, binding: bool) -> tuple[dict[str, Any], Section, list[Target]]:
    timing = ClaimTiming()
    clock = FakeClock(START_MS)
    store, raw, api = StoreSide(clock, timing), RawSide(clock, timing), RegistrySide(clock, timing)
    sides: list[Side] = [store, raw, api]
    try:
        alternatives, notes = _alternatives(timing)
        sides += alternatives
        claim_ids = [wf for side in (store, raw, api) for wf in side.ids]
        bulk_insert(WorkflowClaim, [WorkflowClaim(workflow_id=wf, epoch=1) for wf in claim_ids])
        problems: list[str] = []
        for op in OPERATIONS:
            if op == "takeover":
                _hand_to_dead_engine(claim_ids)
                clock.advance(timing.ttl_ms)
            _settle()
            problems += _measure(sides, op, clock)
    finally:
        for side in sides:
            side.close()

    differ = _same_statements(store, raw)
    section = Section(
        f"SINGLE-CLAIM CALLS  p50/p95 per op over {micro_sides.OPS:,} ops per side after "
        f"{micro_sides.WARMUP} "
        f"warm-up; sides take turns in blocks of {BLOCK}",
        ("op", "side", "p50 us", "p95 us", "ops/s", "p50/raw", "p95/raw", "ops/s/ours", "target"),
    )
    targets: list[Target] = []
    payload: dict[str, Any] = {
        "ops": micro_sides.OPS,
        "warmup": micro_sides.WARMUP,
        "block": BLOCK,
        "raw": raw.name,
    }
    for op in OPERATIONS:
        figures = {
            side.name: {
                "p50_us": _p(side.samples[op], 0.5),
                "p95_us": _p(side.samples[op], 0.95),
                "p99_us": _p(side.samples[op], 0.99),
                "ops_per_s": _ops_per_s(side.samples[op]),
            }
            for side in [raw, store, api, *alternatives]
            if op in side.operations
        }
        base, ours = figures[raw.name], figures[store.name]
        for name, f in figures.items():
            over_raw = name in (store.name, api.name)
            other = name not in (store.name, api.name, raw.name)
            target = ""
            if name == store.name:
                target = f"<= {RATIO_TARGET}x" + ("" if op in BINDING_OPERATIONS else " (ref)")
            elif name == api.name and op in API_P50_US:
                target = f"p50 <= {API_P50_US[op]:,} us (ref)"
            section.rows.append(
                (
                    op if name == raw.name else "",
                    name,
                    f"{f['p50_us']:,.0f}",
                    f"{f['p95_us']:,.0f}",
                    f"{f['ops_per_s']:,.0f}",
                    f"{f['p50_us'] / base['p50_us']:.2f}x" if over_raw else "",
                    f"{f['p95_us'] / base['p95_us']:.2f}x" if over_raw else "",
                    f"{f['ops_per_s'] / ours['ops_per_s']:.2f}x" if other else "",
                    target,
                )
            )
        store_ratio = ours["p50_us"] / base["p50_us"]
        targets.append(
            Target(
                f"micro.{op}",
                f"single {op}: store vs raw, p50",
                store_ratio,
                RATIO_TARGET,
                "x",
                binding and op in BINDING_OPERATIONS,
            )
        )
        if op in API_P50_US:
            targets.append(
                Target(
                    f"micro.api_{op}_p50",
                    f"single {op} via ClaimRegistry, p50",
                    figures[api.name]["p50_us"],
                    API_P50_US[op],
                    "us",
                    False,
                )
            )
        payload[op] = {
            name: {key: round(value, 1) for key, value in f.items()} for name, f in figures.items()
        }
        payload[op]["store_over_raw_p50"] = round(store_ratio, 3)
        payload[op]["store_over_raw_p95"] = round(ours["p95_us"] / base["p95_us"], 3)
        if api.name in figures:
            api_ratio = figures[api.name]["p50_us"] / base["p50_us"]
            payload[op]["api_over_raw_p50"] = round(api_ratio, 3)
        for side in alternatives:
            if side.name in figures:
                # Throughput against ours (higher is faster), kept apart from the overheads.
                speedup = figures[side.name]["ops_per_s"] / ours["ops_per_s"]
                payload[op][side.name]["ops_per_s_vs_ours"] = round(speedup, 2)
    section.notes.append(
        f"raw = the store's own statements (claims.store.sql) with the values written out by "
        f"hand, via {raw.name.split(',')[0]} on a connection of its own"
        + (" in autocommit, prepared" if connection.vendor == "postgresql" else "")
        + "; "
        + (
            "checked identical to what the store sent, text and values, for every op"
            if not differ
            else f"DIFFERENT from what the store sent for: {', '.join(differ)}"
        )
    )
    section.notes.append(
        "ours = OrmClaimStore with the ClaimEvent row the registry writes: acquire and "
        "takeover = cas_grant, release = cas_release"
        + (
            " (each one statement, the event in a data-modifying CTE)"
            if connection.vendor == "postgresql"
            else " (the CAS and the event in one transaction)"
        )
        + "; renew = cas_renew; read = read_claim"
    )
    section.notes.append("API = ClaimRegistry call: read + CAS + event (renew: the CAS only)")
    section.notes.append("ops/s = ops over their summed latency, one thread on one connection")
    names = {side.name for side in alternatives}
    if RedisSide.name in names:
        section.notes.append(LACKS["redis"])
    if AdvisorySide.name in names:
        section.notes.append(LACKS["advisory"])
    section.notes += notes
    if differ:
        problems.append(f"raw statements differ from the store's for {differ}")
    if problems:
        section.notes.append(f"FAILED OPS ({len(problems)}): {problems[:5]}")
    payload["failed_ops"] = len(problems)
    payload["statements_identical"] = not differ
    return payload, section, targets
