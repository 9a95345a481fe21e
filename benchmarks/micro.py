"""Single-claim calls: OrmClaimStore (and the registry) against one raw conditional statement.

The raw side is psycopg on its own autocommit connection (server-side prepare after
psycopg's default threshold) on PostgreSQL, and the sqlite3 module on SQLite.
"""

from __future__ import annotations

import sqlite3
import statistics
import time
from collections.abc import Callable
from typing import Any

from django.db import connection

from claims.models import WorkflowClaim
from claims.protocol import ClaimRegistry, ClaimTiming, Holder
from claims.protocol.testing import FakeClock
from claims.store import OrmClaimStore

from .report import Section, Target
from .setup import bulk_insert

OPS = 2_000
WARMUP = 200
BLOCK = 100
ME = "bench-micro"
DEAD = "bench-dead"
START_MS = 1_700_000_000_000
RATIO_TARGET = 1.5
# Anchors P1 T4/T5, PostgreSQL: p50 of one renew, and of one acquire or takeover, via our API.
API_P50_US = {"acquire": 1_500, "renew": 800, "takeover": 1_500}

_COLUMNS = "holder_engine_id=%s, holder_epoch=%s, holder_expires_at_ms=%s, holder_claimed_at_ms=%s"
_HELD = (
    "epoch=%s AND holder_engine_id=%s AND holder_epoch=%s "
    "AND holder_expires_at_ms=%s AND holder_claimed_at_ms=%s"
)
RAW_SQL = {
    "acquire": (
        f"UPDATE {{t}} SET epoch=%s, {_COLUMNS} WHERE workflow_id=%s AND epoch=%s "
        "AND holder_engine_id IS NULL AND holder_epoch IS NULL "
        "AND holder_expires_at_ms IS NULL AND holder_claimed_at_ms IS NULL"
    ),
    "renew": f"UPDATE {{t}} SET holder_expires_at_ms=%s WHERE workflow_id=%s AND {_HELD}",
    "release": (
        "UPDATE {t} SET holder_engine_id=NULL, holder_epoch=NULL, holder_expires_at_ms=NULL, "
        f"holder_claimed_at_ms=NULL WHERE workflow_id=%s AND {_HELD}"
    ),
    "takeover": f"UPDATE {{t}} SET epoch=%s, {_COLUMNS} WHERE workflow_id=%s AND {_HELD}",
}
OPERATIONS = ("acquire", "renew", "release", "takeover")


class RawConnection:
    """One statement per call on a connection Django knows nothing about; returns rowcount."""

    def __init__(self) -> None:
        settings = connection.settings_dict
        self.vendor = connection.vendor
        self._pg: Any = None
        self._lite: sqlite3.Connection | None = None
        if self.vendor == "postgresql":
            import psycopg

            self._pg = psycopg.connect(
                dbname=settings["NAME"],
                user=settings.get("USER") or None,
                password=settings.get("PASSWORD") or None,
                host=settings.get("HOST") or None,
                port=settings.get("PORT") or None,
                autocommit=True,
            )
            self._cursor = self._pg.cursor()
        else:
            # The same pragmas as Django's connection (settings: WAL, synchronous=NORMAL).
            self._lite = sqlite3.connect(settings["NAME"], isolation_level=None, timeout=20)
            self._lite.execute("PRAGMA synchronous=NORMAL")
        table = WorkflowClaim._meta.db_table
        self.sql = {op: sql.format(t=table) for op, sql in RAW_SQL.items()}
        if self._lite is not None:
            self.sql = {op: sql.replace("%s", "?") for op, sql in self.sql.items()}

    def execute(self, op: str, params: tuple[Any, ...]) -> int:
        if self._lite is not None:
            return self._lite.execute(self.sql[op], params).rowcount
        self._cursor.execute(self.sql[op], params)
        return int(self._cursor.rowcount)

    def close(self) -> None:
        if self._pg is not None:
            self._pg.close()
        if self._lite is not None:
            self._lite.close()


def _holder_params(holder: Holder) -> tuple[Any, ...]:
    return (holder.engine_id, holder.epoch, holder.expires_at_ms, holder.claimed_at_ms)


def _held_params(epoch: int, holder: Holder) -> tuple[Any, ...]:
    return (epoch, *_holder_params(holder))


class Variant:
    """One way of doing the four operations on its own set of workflow ids."""

    def __init__(self, name: str, prefix: str) -> None:
        self.name = name
        self.ids = [f"{prefix}-{i:05d}" for i in range(WARMUP + OPS)]
        self.samples: dict[str, list[float]] = {op: [] for op in OPERATIONS}

    def op(self, op: str, workflow_id: str) -> bool:
        raise NotImplementedError


class StoreVariant(Variant):
    def __init__(self, clock: FakeClock, timing: ClaimTiming) -> None:
        super().__init__("OrmClaimStore", "ms-s")
        self.store = OrmClaimStore()
        self.clock, self.timing = clock, timing
        self.held: dict[str, Holder] = {}

    def op(self, op: str, workflow_id: str) -> bool:
        now, store = self.clock(), self.store
        if op == "acquire":
            holder = Holder(ME, 2, now + self.timing.ttl_ms, now)
            ok = store.cas_grant(
                workflow_id, expected_epoch=1, expected_holder=None, holder=holder, event=None
            )
            self.held[workflow_id] = holder
            return ok
        held = self.held[workflow_id]
        if op == "renew":
            expires = now + self.timing.ttl_ms
            ok = store.cas_renew(workflow_id, held=held, expires_at_ms=expires)
            self.held[workflow_id] = Holder(ME, 2, expires, held.claimed_at_ms)
            return ok
        if op == "release":
            return store.cas_release(workflow_id, held=held, event=None)
        # takeover: the row was handed to a dead engine at epoch 2 in between
        dead = _dead_holder()
        holder = Holder(ME, 3, now + self.timing.ttl_ms, now)
        return store.cas_grant(
            workflow_id, expected_epoch=2, expected_holder=dead, holder=holder, event=None
        )


class RawVariant(Variant):
    def __init__(self, raw: RawConnection, clock: FakeClock, timing: ClaimTiming) -> None:
        super().__init__("raw statement", "ms-r")
        self.raw, self.clock, self.timing = raw, clock, timing
        self.held: dict[str, Holder] = {}

    def op(self, op: str, workflow_id: str) -> bool:
        now, execute = self.clock(), self.raw.execute
        if op == "acquire":
            holder = Holder(ME, 2, now + self.timing.ttl_ms, now)
            self.held[workflow_id] = holder
            return execute(op, (2, *_holder_params(holder), workflow_id, 1)) == 1
        held = self.held[workflow_id]
        if op == "renew":
            expires = now + self.timing.ttl_ms
            self.held[workflow_id] = Holder(ME, 2, expires, held.claimed_at_ms)
            return execute(op, (expires, workflow_id, *_held_params(2, held))) == 1
        if op == "release":
            return execute(op, (workflow_id, *_held_params(2, held))) == 1
        holder = Holder(ME, 3, now + self.timing.ttl_ms, now)
        params = (3, *_holder_params(holder), workflow_id, *_held_params(2, _dead_holder()))
        return execute(op, params) == 1


class RegistryVariant(Variant):
    """The public API: reads, expiry judgement, the CAS and its ClaimEvent row."""

    def __init__(self, clock: FakeClock, timing: ClaimTiming) -> None:
        super().__init__("ClaimRegistry (API)", "ms-g")
        self.registry = ClaimRegistry(OrmClaimStore(), engine_id=ME, clock=clock, timing=timing)

    def op(self, op: str, workflow_id: str) -> bool:
        registry = self.registry
        if op == "acquire":
            return registry.acquire(workflow_id).status == "acquired"
        if op == "renew":
            return registry.renew(workflow_id).status == "renewed"
        if op == "release":
            return registry.release(workflow_id).status == "released"
        return registry.takeover(workflow_id).status == "acquired"


def _dead_holder() -> Holder:
    return Holder(DEAD, 2, START_MS - 600_000, START_MS - 1_200_000)


def _hand_to_dead_engine(ids: list[str]) -> None:
    dead = _dead_holder()
    WorkflowClaim.objects.filter(workflow_id__in=ids).update(
        epoch=2,
        holder_engine_id=dead.engine_id,
        holder_epoch=dead.epoch,
        holder_expires_at_ms=dead.expires_at_ms,
        holder_claimed_at_ms=dead.claimed_at_ms,
    )


def _measure(variants: list[Variant], op: str, clock: FakeClock) -> list[str]:
    """Blocks of BLOCK ops per variant, in rotating order; the first WARMUP ops are not kept."""
    problems = []
    for start in range(0, WARMUP + OPS, BLOCK):
        rotation = (start // BLOCK) % len(variants)
        for variant in variants[rotation:] + variants[:rotation]:
            fn: Callable[[str, str], bool] = variant.op
            for workflow_id in variant.ids[start : start + BLOCK]:
                began = time.perf_counter_ns()
                ok = fn(op, workflow_id)
                elapsed = time.perf_counter_ns() - began
                if not ok:
                    problems.append(f"{variant.name} {op} {workflow_id}")
                if start >= WARMUP:
                    variant.samples[op].append(elapsed / 1_000)
        clock.advance(1)
    return problems


def _p(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(*, binding: bool) -> tuple[dict[str, Any], Section, list[Target]]:
    timing = ClaimTiming()
    clock = FakeClock(START_MS)
    raw = RawConnection()
    variants: list[Variant] = [
        StoreVariant(clock, timing),
        RawVariant(raw, clock, timing),
        RegistryVariant(clock, timing),
    ]
    store, raw_variant, registry = variants
    all_ids = [wf for variant in variants for wf in variant.ids]
    bulk_insert(WorkflowClaim, [WorkflowClaim(workflow_id=wf, epoch=1) for wf in all_ids])
    problems: list[str] = []
    try:
        for op in OPERATIONS:
            if op == "takeover":
                _hand_to_dead_engine(all_ids)
                clock.advance(timing.ttl_ms)
            problems += _measure(variants, op, clock)
    finally:
        raw.close()

    raw_name = "psycopg" if connection.vendor == "postgresql" else "sqlite3"
    section = Section(
        f"SINGLE-CLAIM CALLS  median per op over {OPS:,} ops each after {WARMUP} warm-up "
        f"(raw = one conditional UPDATE via {raw_name}, autocommit"
        + (", auto-prepared after 5 uses)" if raw_name == "psycopg" else ")"),
        ("", "raw us", "store us", "store/raw", "target", "API us", "API/raw", "API p99 us"),
    )
    targets: list[Target] = []
    payload: dict[str, Any] = {"ops": OPS, "warmup": WARMUP, "raw_driver": raw_name}
    for op in OPERATIONS:
        medians = {v.name: statistics.median(v.samples[op]) for v in variants}
        base = medians[raw_variant.name]
        store_ratio = medians[store.name] / base
        api_ratio = medians[registry.name] / base
        section.rows.append(
            (
                op,
                f"{base:.0f}",
                f"{medians[store.name]:.0f}",
                f"{store_ratio:.2f}x",
                f"<= {RATIO_TARGET}x",
                f"{medians[registry.name]:.0f}",
                f"{api_ratio:.2f}x",
                f"{_p(registry.samples[op], 0.99):.0f}",
            )
        )
        targets.append(
            Target(
                f"micro.{op}", f"single {op}: store vs raw", store_ratio, RATIO_TARGET, "x", binding
            )
        )
        if op in API_P50_US:
            targets.append(
                Target(
                    f"micro.api_{op}_p50",
                    f"single {op} via ClaimRegistry, p50",
                    medians[registry.name],
                    API_P50_US[op],
                    "us",
                    False,
                )
            )
        payload[op] = {
            v.name: {
                "median_us": round(medians[v.name], 1),
                "p99_us": round(_p(v.samples[op], 0.99), 1),
            }
            for v in variants
        }
        payload[op]["store_over_raw"] = round(store_ratio, 3)
        payload[op]["api_over_raw"] = round(api_ratio, 3)
    section.notes.append(
        "store = OrmClaimStore CAS with event=None (acquire/takeover = cas_grant, in "
        "transaction.atomic); API = ClaimRegistry call (read + CAS + ClaimEvent row, "
        "renew = CAS only)"
    )
    if problems:
        section.notes.append(f"FAILED OPS ({len(problems)}): {problems[:5]}")
    payload["failed_ops"] = len(problems)
    return payload, section, targets
