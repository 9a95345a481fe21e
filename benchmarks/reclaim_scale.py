"""Reclaim at scale: whole reclaim passes over up to 1,000,000 workflows, and how their
time grows with the stranded count (it should, linearly at most) and with the total
(it should not).

Each point is a fleet of ``total`` workflows, a tenth of them running and held by 8 live
engines, 1 % of those in grace, and ``stranded`` running workflows nobody can be
running: held by a dead engine past the grace, held by a garbage holder, released while
still running, or started with no engine (no claim row). The pass is the engine's own:
``run_reclaim_pass`` with a ``ReclaimTarget`` over ``OrmClaimStore``, the registered
workflow types as its gate, and a long-lived pool of 16 threads with warm connections.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django.db import connection

from claims.models import ClaimEvent, ReclaimCursor, Workflow, WorkflowClaim, WorkflowVisibility
from claims.protocol import ClaimMetrics, ClaimRegistry, ClaimTiming, run_reclaim_pass
from claims.protocol.testing import FakeClock
from claims.workflow_types import is_type_registered

from .pool import reclaim_pool
from .reclaim import SourceTimedStore, TimedTarget
from .report import Section, Target, Timing, fmt, ratio
from .seed import MINUTE_MS, Layout, clear, count_in, execute_in, seed
from .setup import timed_ms

START_MS = 1_700_000_000_000
RECLAIMER = "bench-reclaimer"
DEAD_ENGINES = ("bench-dead-0", "bench-dead-1")
GARBAGE_ENGINE = "bench-garbage"
HELD_SHARE = 10  # one workflow in ten is running and held
REPS = 5
MAX_PASSES = 20  # a drain that needs more is reported as not drained
PASS_TARGET_MS = 2_000.0  # the 1M / 1,000 stranded pass, PostgreSQL
LARGE_POINT = (1_000_000, 1_000)
# Out of every 100 stranded workflows: the engine holding them died (its claims expired
# past the grace), a garbage holder (holder epoch != epoch), released or force-released
# while still running (claim row, no holder), started with no engine (no claim row).
MIX = (("dead holder", 60), ("garbage holder", 2), ("released, running", 23), ("no claim row", 15))


# (total, stranded) pairs, grouped by total (one seed per total).
POINTS = ((10_000, 1_000), (100_000, 1_000), (100_000, 10_000))
LARGE_POINTS = ((100_000, 1_000), (100_000, 10_000), (1_000_000, 1_000), (1_000_000, 10_000))


def points(large: bool) -> list[tuple[int, int]]:
    return list(LARGE_POINTS if large else POINTS)


@dataclass
class Point:
    total: int
    stranded: int
    first_pass_ms: list[float] = field(default_factory=list)
    discovery_ms: list[float] = field(default_factory=list)
    drain_ms: list[float] = field(default_factory=list)
    drain_passes: list[int] = field(default_factory=list)
    reclaimed_first: list[int] = field(default_factory=list)
    candidates: list[int] = field(default_factory=list)
    drained: list[bool] = field(default_factory=list)
    sources_ms: dict[str, list[float]] = field(default_factory=dict)

    def source_medians(self) -> dict[str, float]:
        return {name: round(_median(kept), 2) for name, kept in self.sources_ms.items() if kept}

    def as_json(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "stranded": self.stranded,
            "held": self.total // HELD_SHARE,
            "first_pass": Timing(tuple(self.first_pass_ms)).as_json(),
            "discovery_in_first_pass": Timing(tuple(self.discovery_ms)).as_json(),
            "time_to_drain": Timing(tuple(self.drain_ms)).as_json(),
            "passes_to_drain": self.drain_passes,
            "reclaimed_by_first_pass": self.reclaimed_first,
            "candidates_first_pass": self.candidates,
            "drained": all(self.drained),
            "discovery_sources_median_ms": self.source_medians(),
        }


def _layout(total: int, reserve: int) -> Layout:
    timing = ClaimTiming()
    held = total // HELD_SHARE
    return Layout(
        total=total,
        now_ms=START_MS,
        ttl_ms=timing.ttl_ms,
        renew_interval_ms=timing.renew_interval_ms,
        held=held,
        in_grace=held // 100,
        reserve=reserve,
    )


def _kinds(ids: list[str]) -> dict[str, list[str]]:
    """Split ids by MIX, interleaved so every kind is spread over the key space."""
    kinds: dict[str, list[str]] = {name: [] for name, _ in MIX}
    for i, workflow_id in enumerate(ids):
        slot = i % 100
        for name, share in MIX:
            if slot < share:
                kinds[name].append(workflow_id)
                break
            slot -= share
    return kinds


def _t(model: type) -> str:
    return connection.ops.quote_name(model._meta.db_table)  # type: ignore[attr-defined]


def strand(ids: list[str]) -> None:
    """Turn reserve workflows (completed, no holder) into stranded running ones."""
    kinds = _kinds(ids)
    now = START_MS
    for model in (Workflow, WorkflowVisibility):
        execute_in(f"UPDATE {_t(model)} SET status = 'running' WHERE workflow_id IN ({{ids}})", ids)
    claims = _t(WorkflowClaim)
    dead = kinds["dead holder"]
    for n, engine in enumerate(DEAD_ENGINES):
        execute_in(
            f"UPDATE {claims} SET holder_engine_id = %s, holder_epoch = epoch, "
            "holder_expires_at_ms = %s, holder_claimed_at_ms = %s WHERE workflow_id IN ({ids})",
            dead[n :: len(DEAD_ENGINES)],
            (engine, now - 10 * MINUTE_MS, now - 20 * MINUTE_MS),
        )
    execute_in(
        f"UPDATE {claims} SET holder_engine_id = %s, holder_epoch = epoch + 1, "
        "holder_expires_at_ms = %s, holder_claimed_at_ms = %s WHERE workflow_id IN ({ids})",
        kinds["garbage holder"],
        (GARBAGE_ENGINE, now + MINUTE_MS, now),
    )
    execute_in(f"DELETE FROM {claims} WHERE workflow_id IN ({{ids}})", kinds["no claim row"])


def unstrand(ids: list[str]) -> None:
    """Back to the reserve: completed, a claim row without holder, no takeover events."""
    for model in (Workflow, WorkflowVisibility):
        execute_in(
            f"UPDATE {_t(model)} SET status = 'completed' WHERE workflow_id IN ({{ids}})", ids
        )
    execute_in(
        f"UPDATE {_t(WorkflowClaim)} SET holder_engine_id = NULL, holder_epoch = NULL, "
        "holder_expires_at_ms = NULL, holder_claimed_at_ms = NULL WHERE workflow_id IN ({ids})",
        ids,
    )
    existing = set(
        WorkflowClaim.objects.filter(workflow_id__in=ids).values_list("workflow_id", flat=True)
    )
    WorkflowClaim.objects.bulk_create(
        [WorkflowClaim(workflow_id=wf, epoch=1) for wf in ids if wf not in existing],
        batch_size=5_000,
    )
    ClaimEvent.objects.filter(engine_id=RECLAIMER).delete()


def held_by_reclaimer(ids: list[str]) -> int:
    return count_in(
        f"SELECT COUNT(*) FROM {_t(WorkflowClaim)} WHERE holder_engine_id = %s "
        "AND workflow_id IN ({ids})",
        ids,
        (RECLAIMER,),
    )


def _target() -> TimedTarget:
    metrics = ClaimMetrics()
    store = SourceTimedStore()
    registry = ClaimRegistry(
        store, engine_id=RECLAIMER, clock=FakeClock(START_MS), timing=ClaimTiming(), metrics=metrics
    )
    driven: list[str] = []
    # The engine hands each reclaimed workflow to its drive pool; the drive is not the pass.
    return TimedTarget(
        registry,
        store,
        metrics=metrics,
        on_reclaimed=driven.append,
        is_type_registered=is_type_registered,
    )


def _drain(point: Point, ids: list[str], run_pass: Callable[[TimedTarget], Any]) -> None:
    strand(ids)
    target = _target()
    elapsed, result = timed_ms(partial(run_pass, target))
    point.first_pass_ms.append(elapsed)
    point.discovery_ms.append(target.discovery_ms)
    point.reclaimed_first.append(result.reclaimed_count)
    point.candidates.append(len(result.outcomes))
    assert isinstance(target.store, SourceTimedStore)
    for name, kept in target.store.source_ms.items():
        point.sources_ms.setdefault(name, []).extend(kept[:1])
    total_ms, passes = elapsed, 1
    while held_by_reclaimer(ids) < len(ids) and passes < MAX_PASSES:
        elapsed, _ = timed_ms(partial(run_pass, target))
        total_ms += elapsed
        passes += 1
    point.drained.append(held_by_reclaimer(ids) == len(ids))
    point.drain_ms.append(total_ms)
    point.drain_passes.append(passes)
    unstrand(ids)


def _idle(run_pass: Callable[[TimedTarget], Any]) -> Timing:
    """Passes with nothing stranded: what a pass costs before any takeover."""
    samples = []
    for _ in range(REPS):
        elapsed, result = timed_ms(partial(run_pass, _target()))
        if result.reclaimed_count:
            raise RuntimeError(f"an idle pass reclaimed {result.reclaimed_count}")
        samples.append(elapsed)
    return Timing(tuple(samples))


def measure(totals: dict[int, list[int]]) -> tuple[list[Point], dict[int, Any]]:
    """For each total (one seed each), the idle pass, then each stranded count, REPS times."""
    import claims.runtime.demo_workflows  # noqa: F401  (registers the types the fleet runs)

    measured: list[Point] = []
    per_total: dict[int, Any] = {}
    with reclaim_pool() as pool:

        def run_pass(target: TimedTarget) -> Any:
            result = run_reclaim_pass(target, executor=pool)
            if result.status != "completed":
                raise RuntimeError(f"reclaim pass {result.status}")
            return result

        for total, stranded_counts in totals.items():
            clear()
            ReclaimCursor.objects.all().delete()
            layout = _layout(total, max(stranded_counts))
            setup = seed(layout)
            reserve = layout.ids("reserve")
            run_pass(_target())  # warm-up: plans cached, the cursor row made
            idle = _idle(run_pass)
            per_total[total] = {"seed": setup, "idle_pass": idle.as_json()}
            for stranded in stranded_counts:
                point = Point(total, stranded)
                for _ in range(REPS):
                    _drain(point, reserve[:stranded], run_pass)
                measured.append(point)
        clear()
    return measured, per_total


def _by_source(ms: dict[str, float]) -> str:
    if not ms:
        return ""
    return f"stale {fmt(ms['stale'])} + index {fmt(ms['unheld'])} + page {fmt(ms['page'])}"


def _median(values: list[float]) -> float:
    return statistics.median(values)


def run(*, binding: bool, large: bool) -> tuple[dict[str, Any], Section, list[Target]]:
    vendor = connection.vendor
    totals: dict[int, list[int]] = {}
    for total, stranded in points(large):
        totals.setdefault(total, []).append(stranded)
    measured, per_total = measure(totals)
    by_key = {(p.total, p.stranded): p for p in measured}

    section = Section(
        f"RECLAIM AT SCALE  whole run_reclaim_pass over N workflows (1 in {HELD_SHARE} running "
        f"and held by 8 live engines) with S stranded; median of {REPS}",
        (
            "workflows",
            "stranded",
            "first pass ms",
            "min-max",
            "discovery ms",
            "reclaimed",
            "drain ms",
            "passes",
            "idle pass ms",
            "discovery by source (ms)",
        ),
    )
    for point in measured:
        first = Timing(tuple(point.first_pass_ms))
        idle = per_total[point.total]["idle_pass"]["median_ms"]
        section.rows.append(
            (
                f"{point.total:,}",
                f"{point.stranded:,}",
                fmt(first.median),
                first.spread(),
                fmt(_median(point.discovery_ms)),
                f"{min(point.reclaimed_first):,}",
                fmt(_median(point.drain_ms)),
                str(max(point.drain_passes)),
                fmt(idle),
                _by_source(point.source_medians()),
            )
        )
    targets: list[Target] = []
    linearity: dict[str, Any] = {}
    totals_seen = sorted(totals)
    big = totals_seen[-1]
    if len(totals.get(big, [])) > 1:
        few, many = sorted(totals[big])[0], sorted(totals[big])[-1]
        value = _median(by_key[(big, many)].first_pass_ms) / _median(
            by_key[(big, few)].first_pass_ms
        )
        linearity["stranded"] = {"total": big, "from": few, "to": many, "ratio": round(value, 3)}
        targets.append(
            Target(
                f"reclaim_scale.stranded_ratio.{big}",
                f"reclaim pass, {many // few}x stranded ({few:,}->{many:,}, {big:,} workflows)",
                value,
                many / few,
                "x",
                binding and (big, few) == LARGE_POINT,
            )
        )
    small = totals_seen[0]
    common = sorted(set(totals[small]) & set(totals[big]))
    if small != big and common:
        stranded = common[0]
        value = _median(by_key[(big, stranded)].first_pass_ms) / _median(
            by_key[(small, stranded)].first_pass_ms
        )
        linearity["total"] = {
            "stranded": stranded,
            "from": small,
            "to": big,
            "ratio": round(value, 3),
        }
        # Linear in the total would be big/small; "not in the total" is judged as at most
        # half of that (reported for reference: the requirement names no number).
        targets.append(
            Target(
                f"reclaim_scale.total_ratio.{small}",
                f"reclaim pass, {big // small}x workflows ({small:,}->{big:,}, "
                f"{stranded:,} stranded)",
                value,
                big / small / 2,
                "x",
                False,
            )
        )
    if small != big:
        value = (
            per_total[big]["idle_pass"]["median_ms"] / per_total[small]["idle_pass"]["median_ms"]
        )
        linearity["idle_total"] = {"from": small, "to": big, "ratio": round(value, 3)}
        targets.append(
            Target(
                f"reclaim_scale.idle_total_ratio.{small}",
                f"reclaim pass with nothing stranded, {big // small}x workflows "
                f"({small:,}->{big:,})",
                value,
                big / small / 2,
                "x",
                False,
            )
        )
    headline = by_key.get(LARGE_POINT)
    if headline is not None:
        first_ms = _median(headline.first_pass_ms)
        drain_ms = _median(headline.drain_ms)
        targets.append(
            Target(
                "reclaim_scale.pass_1m",
                "reclaim pass, 1M workflows, 1,000 stranded (first pass)",
                first_ms,
                PASS_TARGET_MS,
                "ms",
                binding and vendor == "postgresql",
            )
        )
        targets.append(
            Target(
                "reclaim_scale.drain_1m",
                "reclaim, 1M workflows: time to drain 1,000 stranded",
                drain_ms,
                PASS_TARGET_MS,
                "ms",
                binding and vendor == "postgresql",
            )
        )
    if "stranded" in linearity:
        line = linearity["stranded"]
        section.notes.append(
            f"stranded x{line['to'] // line['from']} over {line['total']:,} workflows: pass time "
            f"x{line['ratio']:.2f} (linear would be x{line['to'] // line['from']})"
        )
    if "total" in linearity:
        line = linearity["total"]
        section.notes.append(
            f"workflows x{line['to'] // line['from']} at {line['stranded']:,} stranded: pass time "
            f"x{line['ratio']:.2f} (linear in the total would be x{line['to'] // line['from']}; "
            "judged, for reference, against half of that)"
        )
    if "idle_total" in linearity:
        line = linearity["idle_total"]
        section.notes.append(
            f"workflows x{line['to'] // line['from']} with nothing stranded: pass time "
            f"x{line['ratio']:.2f} (what discovery costs before any takeover; its sources by "
            "time in the last column)"
        )
    section.notes.append(
        "stranded mix per 100: "
        + ", ".join(f"{share} {name}" for name, share in MIX)
        + f"; plus {HELD_SHARE}% running held live and 1% of those in grace (not candidates); "
        "every finished workflow keeps its claim row"
    )
    section.notes.append(
        "first pass = one run_reclaim_pass from a fresh engine (set-based takeovers, then "
        "one-by-one CAS for what is left); drain = passes until every stranded workflow is "
        "held by the reclaimer (checked in the database between passes, untimed); idle "
        "pass = the same pass with nothing stranded (discovery + one cursor page)"
    )
    for total, info in per_total.items():
        s = info["seed"]
        section.notes.append(
            f"seed {total:,} workflows: {s['seed_s']:.1f} s (INSERT ... SELECT over "
            + ("generate_series" if vendor == "postgresql" else "a recursive CTE")
            + f": workflows {s['workflows_s']:.1f} s, visibility {s['visibility_s']:.1f} s, "
            f"claims {s['claims_s']:.1f} s"
            + (f", VACUUM ANALYZE {s['analyze_s']:.1f} s)" if s["analyzed"] else ")")
        )
    if not all(all(p.drained) for p in measured):
        section.notes.append("NOT DRAINED within the pass limit: " + str(MAX_PASSES))
    if headline is not None:
        section.notes.append(
            "target: under 2 s for the 1M / 1,000 stranded point on PostgreSQL; the first "
            "pass reclaims every stranded workflow, so it is also the time to drain"
            if max(headline.drain_passes) == 1
            else f"target: under 2 s; draining took {max(headline.drain_passes)} passes"
        )
    payload = {
        "points": [p.as_json() for p in measured],
        "per_total": {str(k): v for k, v in per_total.items()},
        "linearity": linearity,
        "mix": dict(MIX),
        "reps": REPS,
        "ratio_text": {k: ratio(v["ratio"]) for k, v in linearity.items()},
    }
    return payload, section, targets
