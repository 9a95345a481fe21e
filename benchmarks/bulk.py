"""Bulk jobs: releasing 100,000 claims by query against a hand-written batched compare-and-
swap UPDATE over the same rows; ten engines' renew passes beside that job against without
it; and, at a million claims (``bulk-1m``), the freeze of every claim and the preview of an
indexed query.

The job runs as a worker runs it: created (its freeze timed with it) and then run to the
end by ``bulk_run`` in this process for the ratio, and in a process of its own beside the
engines for the renew figure. Every rep puts the released rows back as they were."""

from __future__ import annotations

import functools
import json
import multiprocessing
import time
from typing import Any

from django.db import connection

from claims.bulk import BulkHooks, bulk_preview, bulk_run
from claims.fleet_clock import fleet_now
from claims.models import BulkJob, BulkJobItem, ClaimEvent, WorkflowClaim
from claims.protocol import ClaimMetrics, ClaimRegistry, ClaimTiming, run_renew_pass
from claims.protocol.testing import FakeClock
from claims.query import format_query, parse
from claims.services.bulk import BulkRequest, bulk_job_create
from claims.store import OrmClaimStore

from . import bulk_child
from .bulk_floor import release_floor
from .report import Section, Target, Timing, fmt, ratio
from .seed import Layout, clear, seed
from .setup import analyze, timed_ms

RELEASED = 100_000
ENGINES = 10
ENGINE_CLAIMS = 2_000
REPS = 3
RENEW_ROUNDS = 6
# The job's own chunk size is the binding baseline's batch: the same rows per transaction.
# A batch of 5,000 (one statement where the store's set-based writes take that many) is
# reported beside it.
BASELINE_BATCHES = (250, 5_000)
RATIO_TARGET = 2.0
RENEW_TARGET = 1.5
# An operator's rate cap (items a second) under the job's own pace: the renew passes beside
# it are reported too, the lever an operator has on a busy database.
RATE_CAPPED = 4_000
MILLION = 1_000_000
MILLION_ENGINES = 50
FREEZE_TARGET_MS = 10_000.0
PREVIEW_TARGET_MS = 200.0
PREVIEW_REPS = 7
QUERY = 'engine = "bench-live-0"'
START_MS = 1_700_000_000_000
TIMING = ClaimTiming(ttl_ms=30_000, renew_interval_ms=5_000)

_UNNEST_RELEASE = (
    "UPDATE {table} c SET epoch = c.epoch + 1, holder_engine_id = NULL, holder_epoch = NULL, "
    "holder_expires_at_ms = NULL, holder_claimed_at_ms = NULL, holder_session_epoch = NULL "
    "FROM unnest(%s::text[], %s::bigint[]) u(wid, ep) "
    "WHERE c.workflow_id = u.wid AND c.epoch = u.ep"
)
_JSON_RELEASE = (
    "UPDATE {table} SET epoch = epoch + 1, holder_engine_id = NULL, holder_epoch = NULL, "
    "holder_expires_at_ms = NULL, holder_claimed_at_ms = NULL, holder_session_epoch = NULL "
    "FROM (SELECT json_extract(value, '$[0]') AS wid, json_extract(value, '$[1]') AS ep "
    "FROM json_each(%s)) AS u WHERE {table}.workflow_id = u.wid AND {table}.epoch = u.ep"
)


def _table() -> str:
    return connection.ops.quote_name(WorkflowClaim._meta.db_table)


def _baseline(rows: list[tuple[str, int]], batch: int) -> int:
    """The hand-written batched compare-and-swap release, a transaction per batch."""
    changed = 0
    with connection.cursor() as cursor:
        for start in range(0, len(rows), batch):
            chunk = rows[start : start + batch]
            if connection.vendor == "postgresql":
                ids, epochs = [wid for wid, _ in chunk], [ep for _, ep in chunk]
                cursor.execute(_UNNEST_RELEASE.format(table=_table()), [ids, epochs])
            else:
                cursor.execute(_JSON_RELEASE.format(table=_table()), [json.dumps(chunk)])
            changed += cursor.rowcount
    return changed


def _restore(now_ms: int) -> None:
    """Put the released rows back under bench-live-0 at their old epochs; drop the job."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {_table()} SET epoch = epoch - 1, holder_engine_id = 'bench-live-0', "
            "holder_epoch = epoch - 1, holder_expires_at_ms = %s, holder_claimed_at_ms = %s "
            "WHERE holder_engine_id IS NULL AND workflow_id LIKE 'wf-0%%'",
            [now_ms + TIMING.ttl_ms, now_ms],
        )
        for model in (ClaimEvent, BulkJobItem, BulkJob):
            cursor.execute(f"DELETE FROM {connection.ops.quote_name(model._meta.db_table)}")
    if connection.vendor == "postgresql":
        # Every rep starts from tables without the last rep's dead rows: the claims the
        # baseline and the job update, the events and items only the job writes.
        with connection.cursor() as cursor:
            for table in (WorkflowClaim, ClaimEvent, BulkJobItem):
                name = connection.ops.quote_name(table._meta.db_table)
                cursor.execute(f"VACUUM (ANALYZE) {name}")


def _create(rate_per_s: int | None = None) -> BulkJob:
    return bulk_job_create(
        BulkRequest(
            "claims",
            QUERY,
            "release",
            "benchmark",
            expected_count=RELEASED,
            rate_per_s=rate_per_s,
        ),
        actor="bench",
    )


def _job(hooks: BulkHooks) -> int:
    job = bulk_run(_create().pk, hooks=hooks)
    if job.status != "done":
        raise RuntimeError(f"bulk job ended {job.status}: {job.error}")
    return job.done_count


def _engines() -> tuple[FakeClock, list[ClaimRegistry]]:
    clock = FakeClock(START_MS)
    registries = []
    for n in range(ENGINES):
        registry = ClaimRegistry(
            OrmClaimStore(),
            engine_id=f"bench-engine-{n}",
            clock=clock,
            timing=TIMING,
            metrics=ClaimMetrics(),
        )
        registry.acquire_many([f"wf-e{n:02d}-{i:05d}" for i in range(ENGINE_CLAIMS)])
        registries.append(registry)
    return clock, registries


def _renew_round(clock: FakeClock, registries: list[ClaimRegistry]) -> list[float]:
    """One renew pass of each engine, as their ticks would run them; each pass's ms."""
    clock.advance(TIMING.renew_interval_ms)
    times = []
    for registry in registries:
        elapsed, result = timed_ms(functools.partial(run_renew_pass, registry, ClaimMetrics()))
        if result.renewed_count != ENGINE_CLAIMS:
            raise RuntimeError(f"renewed {result.renewed_count} of {ENGINE_CLAIMS}")
        times.append(elapsed)
    return times


def _renew_beside_job(
    clock: FakeClock, registries: list[ClaimRegistry], rate_per_s: int | None = None
) -> list[float]:
    """Renew rounds while a runner process works through a job, until it ends."""
    job = _create(rate_per_s)
    context = multiprocessing.get_context("spawn")
    url = bulk_child.database_url(connection.settings_dict)
    runner = context.Process(target=bulk_child.run_job, args=(url, job.pk), name="bulk-runner")
    runner.start()
    times: list[float] = []
    try:
        while BulkJob.objects.filter(pk=job.pk, status="queued").exists() and runner.is_alive():
            time.sleep(0.01)
        while runner.is_alive():
            times += _renew_round(clock, registries)
    finally:
        runner.join(timeout=600)
    if runner.exitcode != 0:
        raise RuntimeError(f"the bulk runner process exited {runner.exitcode}")
    return times


def _seed_held(now_ms: int, total: int, *, engines: int) -> dict[str, Any]:
    """A fresh fleet of ``total`` claims, every one held by ``engines`` live engines."""
    clear()
    return seed(
        Layout(
            total=total,
            now_ms=now_ms,
            ttl_ms=TIMING.ttl_ms,
            renew_interval_ms=TIMING.renew_interval_ms,
            held=total,
            live_engines=engines,
        )
    )


def run(*, binding: bool) -> tuple[dict[str, Any], Section, list[Target]]:
    now_ms, _ = fleet_now()
    _seed_held(now_ms, RELEASED, engines=1)
    clock, registries = _engines()
    analyze()
    rows = list(
        WorkflowClaim.objects.filter(holder_engine_id="bench-live-0")
        .order_by("workflow_id")
        .values_list("workflow_id", "epoch")
    )
    no_pause = BulkHooks(between_chunks=lambda *args: None)
    baseline_ms: dict[int, list[float]] = {batch: [] for batch in BASELINE_BATCHES}
    job_ms: list[float] = []
    floor_ms: list[float] = []

    def baselines() -> None:
        for batch in BASELINE_BATCHES:
            elapsed, changed = timed_ms(functools.partial(_baseline, rows, batch))
            if changed != RELEASED:
                raise RuntimeError(f"the baseline released {changed} of {RELEASED}")
            baseline_ms[batch].append(elapsed)
            _restore(now_ms)
        if connection.vendor == "postgresql":
            floor = functools.partial(release_floor, "bench-live-0", BASELINE_BATCHES[0], now_ms)
            elapsed, changed = timed_ms(floor)
            if changed != RELEASED:
                raise RuntimeError(f"the floor released {changed} of {RELEASED}")
            floor_ms.append(elapsed)
            _restore(now_ms)

    def job() -> None:
        elapsed, done = timed_ms(lambda: _job(no_pause))
        if done != RELEASED:
            raise RuntimeError(f"the job released {done} of {RELEASED}")
        job_ms.append(elapsed)
        _restore(now_ms)

    for rep in range(REPS):  # alternating which goes first
        for step in (baselines, job) if rep % 2 == 0 else (job, baselines):
            step()
    alone: list[float] = []
    for _ in range(RENEW_ROUNDS):
        alone += _renew_round(clock, registries)
    beside = _renew_beside_job(clock, registries)
    _restore(now_ms)
    beside_capped = _renew_beside_job(clock, registries, RATE_CAPPED)
    _restore(now_ms)

    ours = Timing(tuple(job_ms))
    bases = {batch: Timing(tuple(ms)) for batch, ms in baseline_ms.items()}
    binding_base = bases[BASELINE_BATCHES[0]]
    job_ratio = ours.median / binding_base.median
    renew_alone, renew_beside = Timing(tuple(alone)), Timing(tuple(beside))
    renew_ratio = renew_beside.median / renew_alone.median
    renew_capped = Timing(tuple(beside_capped))
    section = Section(
        f"BULK RELEASE  {RELEASED:,} claims by query ({QUERY}), "
        f"median of {REPS}; renew passes of {ENGINES} engines x {ENGINE_CLAIMS:,} claims",
        ("", "median ms", "min-max", "ratio", "target"),
    )
    for batch, base in bases.items():
        section.rows.append(
            (
                f"baseline: batched CAS UPDATE, {batch:,} a batch",
                fmt(base.median),
                base.spread(),
                ratio(base.median / binding_base.median),
                "",
            )
        )
    if floor_ms:
        floor = Timing(tuple(floor_ms))
        section.rows.append(
            (
                "floor: the job's writes by hand, 250 a batch",
                fmt(floor.median),
                floor.spread(),
                ratio(floor.median / binding_base.median),
                "",
            )
        )
        section.notes.append(
            "the floor freezes the items and writes, per item, the claim's compare-and-swap, "
            "its event and its outcome, one statement a batch, with no judgement and no "
            f"locks (benchmarks/bulk_floor.py); the job took {ours.median / floor.median:.2f}x "
            "the floor"
        )
    section.rows.append(
        (
            "bulk job: freeze + run (ours)",
            fmt(ours.median),
            ours.spread(),
            ratio(job_ratio),
            f"<= {RATIO_TARGET}x",
        )
    )
    section.rows.append(
        ("renew pass, no job", fmt(renew_alone.median), renew_alone.spread(), "1.00x", "")
    )
    section.rows.append(
        (
            f"renew pass beside the job ({len(beside)} passes)",
            fmt(renew_beside.median),
            renew_beside.spread(),
            ratio(renew_ratio),
            f"<= {RENEW_TARGET}x",
        )
    )
    section.rows.append(
        (
            f"renew pass beside a job capped at {RATE_CAPPED:,} items/s ({len(beside_capped)})",
            fmt(renew_capped.median),
            renew_capped.spread(),
            ratio(renew_capped.median / renew_alone.median),
            "",
        )
    )
    section.notes.append(
        "the job writes, per item, the claim's compare-and-swap, its audit event and its "
        "outcome, in chunks of 250 (one transaction each); the baseline writes the claims only"
    )
    targets = [
        Target(
            "bulk.release_ratio",
            f"bulk release {RELEASED:,}: job vs batched CAS UPDATE",
            job_ratio,
            RATIO_TARGET,
            "x",
            binding,
        ),
        Target(
            "bulk.renew_beside_ratio",
            "renew pass beside a bulk job vs without",
            renew_ratio,
            RENEW_TARGET,
            "x",
            binding,
        ),
    ]
    data = {
        "released": RELEASED,
        "job": ours.as_json(),
        "baselines": {str(batch): base.as_json() for batch, base in bases.items()},
        "renew_alone": renew_alone.as_json(),
        "renew_beside": renew_beside.as_json(),
        "renew_beside_capped": renew_capped.as_json(),
    }
    return data, section, targets


def run_million(*, binding: bool) -> tuple[dict[str, Any], Section, list[Target]]:
    """The freeze of every one of a million claims, and an indexed query's preview."""
    now_ms, timing = fleet_now()
    seeded = _seed_held(now_ms, MILLION, engines=MILLION_ENGINES)
    analyze()
    indexed = parse('engine = "bench-live-7"')
    previews = []
    for _ in range(PREVIEW_REPS):
        elapsed, preview = timed_ms(
            lambda: bulk_preview("claims", indexed, "release", now_ms=now_ms, timing=timing)
        )
        previews.append(elapsed)
    expected = MILLION // MILLION_ENGINES
    if preview.count != expected:
        raise RuntimeError(f"the preview counted {preview.count}, not {expected}")
    freeze_ms, job = timed_ms(
        lambda: bulk_job_create(
            BulkRequest("claims", "epoch >= 1", "release", "benchmark", expected_count=MILLION),
            actor="bench",
        )
    )
    if job.frozen_count != MILLION:
        raise RuntimeError(f"froze {job.frozen_count} of {MILLION}")
    clear()
    with connection.cursor() as cursor:
        for model in (BulkJobItem, BulkJob):
            cursor.execute(f"DELETE FROM {connection.ops.quote_name(model._meta.db_table)}")
    preview_timing = Timing(tuple(previews))
    section = Section(
        f"BULK AT A MILLION  {MILLION:,} held claims over {MILLION_ENGINES} engines "
        f"(seeded in {seeded['seed_s']} s)",
        ("", "ms", "min-max", "target"),
    )
    section.rows.append(
        (
            f"preview of {format_query(indexed)} ({expected:,} rows), median of {PREVIEW_REPS}",
            fmt(preview_timing.median),
            preview_timing.spread(),
            f"<= {PREVIEW_TARGET_MS:g} ms",
        )
    )
    section.rows.append(
        (
            "freeze of every claim (epoch >= 1), one job",
            fmt(freeze_ms),
            "",
            f"<= {FREEZE_TARGET_MS:g} ms",
        )
    )
    targets = [
        Target(
            "bulk1m.preview_ms",
            "bulk preview at 1,000,000 claims (indexed query)",
            preview_timing.median,
            PREVIEW_TARGET_MS,
            "ms",
            binding,
        ),
        Target(
            "bulk1m.freeze_ms",
            "bulk freeze of 1,000,000 items",
            freeze_ms,
            FREEZE_TARGET_MS,
            "ms",
            binding,
        ),
    ]
    data = {"preview": preview_timing.as_json(), "freeze_ms": round(freeze_ms, 1)}
    return data, section, targets
