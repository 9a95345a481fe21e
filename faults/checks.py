"""The invariants, checked against the recorded history after the run.

Each check returns what it saw and every violation, with enough detail to find the
workflow. Counts that are expected but worth knowing (a step run twice because its owner
changed between the effect and its checkpoint) are reported, not failed.
"""

from __future__ import annotations

import itertools
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from .fleet_under_test import Timing
from .history import BulkJobRecord, History, LedgerRow
from .nemesis import FaultRecord
from .watch import Stretch

GRANT_BY_OPERATOR = {"forced_release", "forced_takeover", "rotated"}
SHOWN_VIOLATIONS = 12


@dataclass
class Check:
    name: str
    invariant: str
    facts: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.violations


def checkpoints_check(history: History) -> Check:
    check = Check(
        "checkpoints",
        "per workflow and epoch at most one engine committed checkpoints, and no checkpoint of"
        " an older epoch committed after the first of a newer one or after the newer grant",
    )
    total = 0
    for workflow_id, checkpoints in history.checkpoints.items():
        owners: dict[int, set[str]] = defaultdict(set)
        newest = 0
        for point in checkpoints:
            total += 1
            owners[point.epoch].add(point.engine_id)
            if point.epoch < newest:
                check.violations.append(
                    f"{workflow_id}: {point.record} at epoch {point.epoch} committed after a"
                    f" checkpoint of epoch {newest}"
                )
            newest = max(newest, point.epoch)
            granted = history.grant_at_ms(workflow_id, point.epoch + 1)
            if granted is not None and point.at_ms > granted:
                check.violations.append(
                    f"{workflow_id}: {point.record} at epoch {point.epoch} committed"
                    f" {point.at_ms - granted} ms after epoch {point.epoch + 1} was granted"
                )
        for epoch, engines in owners.items():
            if len(engines) > 1:
                check.violations.append(
                    f"{workflow_id}: epoch {epoch} has checkpoints of {sorted(engines)}"
                )
    check.facts.append(f"{total} checkpoints of {len(history.checkpoints)} workflows")
    return check


def epochs_check(history: History) -> Check:
    check = Check(
        "epochs",
        "every claim's epoch only grew, by exactly one per grant or rotation, and each epoch"
        " had at most one holder",
    )
    grants = 0
    for workflow_id, versions in history.claims.items():
        previous = 0
        holders: dict[int, set[str]] = defaultdict(set)
        for version in versions:
            if version.epoch - previous not in (0, 1):
                check.violations.append(
                    f"{workflow_id}: epoch went from {previous} to {version.epoch}"
                )
            grants += max(0, version.epoch - previous)
            previous = version.epoch
            if version.holder_engine_id is not None and version.holder_epoch is not None:
                holders[version.holder_epoch].add(version.holder_engine_id)
        for epoch, engines in holders.items():
            if len(engines) > 1:
                check.violations.append(f"{workflow_id}: epoch {epoch} held by {sorted(engines)}")
        logged = 0
        for kind, before, after in history.events.get(workflow_id, ()):
            if after is None:
                continue
            step = after - (before or 0)
            if step not in (0, 1):
                check.violations.append(f"{workflow_id}: a {kind} event moved {before} -> {after}")
            logged += step
        if logged != previous:
            check.violations.append(
                f"{workflow_id}: the event log accounts for {logged} epoch steps, the row for"
                f" {previous}"
            )
    check.facts.append(
        f"{grants} grants and rotations over {len(history.claims)} claims, each +1,"
        " each matched by its event"
    )
    return check


def _active_fault(records: list[FaultRecord], at_ms: int, slack_ms: int) -> str | None:
    """The latest fault that started before ``at_ms`` and whose effects may last until then."""
    active = [
        record
        for record in records
        if record.started_ms <= at_ms <= (record.ended_ms or at_ms) + slack_ms
    ]
    return max(active, key=lambda record: record.started_ms).kind if active else None


def _cause_of_grant(
    history: History, records: list[FaultRecord], workflow_id: str, epoch: int, slack_ms: int
) -> str:
    kinds = [k for k, _, after in history.events.get(workflow_id, ()) if after == epoch]
    if any(kind in GRANT_BY_OPERATOR for kind in kinds):
        return "operator (forced release, forced takeover or cancel)"
    granted = history.grant_at_ms(workflow_id, epoch)
    fault = None if granted is None else _active_fault(records, granted, slack_ms)
    if fault is not None:
        return f"fault: {fault}"
    return "ownership lapsed under load (no fault active)"


def ledger_check(history: History, records: list[FaultRecord], timing: Timing) -> Check:
    check = Check(
        "ledger",
        "every step whose checkpoint committed has exactly one effect under the checkpoint's"
        " epoch and engine, no effect after its checkpoint, and no effect of a deposed owner"
        " after its successor's grant; re-runs after an ownership change are counted by cause",
    )
    slack = timing.stranded_bound_ms
    reruns: Counter[str] = Counter()
    steps = 0
    for workflow_id in history.ledger_workflows | set(history.ledger):
        committed = {
            p.record.removeprefix("steps:"): p
            for p in reversed(history.checkpoints.get(workflow_id, []))
            if p.record.startswith("steps:")
        }
        by_step: dict[str, list[LedgerRow]] = {step: [] for step in committed}
        for row in history.ledger.get(workflow_id, []):
            by_step.setdefault(row.step, []).append(row)
        for step, effects in by_step.items():
            steps += 1
            for row in effects:
                granted = history.grant_at_ms(workflow_id, row.epoch + 1)
                if granted is not None and row.at_ms > granted:
                    check.violations.append(
                        f"{workflow_id} {step}: effect of epoch {row.epoch} on {row.engine_id}"
                        f" committed {row.at_ms - granted} ms after epoch {row.epoch + 1}'s grant"
                    )
            point = committed.get(step)
            if point is None:
                continue
            owned = [r for r in effects if (r.epoch, r.engine_id) == (point.epoch, point.engine_id)]
            if not owned:
                check.violations.append(
                    f"{workflow_id} {step}: checkpoint at epoch {point.epoch} without an effect"
                )
            late = [r for r in effects if r.at_ms > point.at_ms]
            if late:
                check.violations.append(
                    f"{workflow_id} {step}: {len(late)} effect(s) after its checkpoint committed"
                )
            for row in effects:
                if row.epoch < point.epoch:
                    reruns[
                        _cause_of_grant(history, records, workflow_id, row.epoch + 1, slack)
                    ] += 1
            for rerun in owned[1:]:
                # The same owner ran it again: its checkpoint write failed, and the re-run
                # came after the fault that failed it.
                fault = _active_fault(records, rerun.at_ms, slack)
                cause = f"fault: {fault}" if fault else "a failed checkpoint write, re-driven"
                reruns[f"same epoch, {cause}"] += 1
    check.facts.append(f"{steps} ledger steps of {len(history.ledger)} workflows")
    total = sum(reruns.values())
    check.facts.append(f"{total} re-run(s) after an ownership change between effect and checkpoint")
    for cause, count in reruns.most_common():
        check.facts.append(f"  {count:5d}  {cause}")
    return check


def bulk_check(jobs: list[BulkJobRecord]) -> Check:
    """Each bulk job's items: acted on at most once, a done item by exactly one claim event
    of its job moving its frozen epoch up by one, and every job over by the end."""
    check = Check(
        "bulk",
        "each bulk job acted on each item at most once: a done item has exactly one event of"
        " its job, from its frozen epoch to the next; moved and refused items have none; every"
        " job ended (done, or paused with the rows it could not lock)",
    )
    outcomes: Counter[str] = Counter()
    for job in jobs:
        if job.status not in ("done", "paused"):
            check.violations.append(f"bulk job #{job.job_id} ended {job.status}")
        for workflow_id, (outcome, frozen, after) in job.items.items():
            outcomes[outcome] += 1
            events = job.events.get(workflow_id, [])
            if outcome == "done":
                if events != [(frozen or None, frozen + 1)] or after != frozen + 1:
                    check.violations.append(
                        f"bulk job #{job.job_id}: {workflow_id} done at {frozen} -> {after}"
                        f" with events {events}"
                    )
            elif events:
                check.violations.append(
                    f"bulk job #{job.job_id}: {workflow_id} {outcome} yet has events {events}"
                )
        strays = set(job.events) - set(job.items)
        if strays:
            check.violations.append(
                f"bulk job #{job.job_id}: events for workflows not in it: {sorted(strays)[:3]}"
            )
    check.facts.append(f"{len(jobs)} bulk jobs, items {dict(sorted(outcomes.items()))}")
    return check


def api_check(operations: dict[str, int], start_failures: dict[str, int]) -> Check:
    check = Check(
        "api",
        "the JSON API answered every start and operator call without a server error or a"
        " dropped connection (a 409 for an epoch that moved on is a correct answer)",
    )
    calls = {f"start:{status}": count for status, count in start_failures.items()}
    calls.update(operations)
    for call, count in sorted(calls.items()):
        status = call.rsplit(":", 1)[-1].removeprefix("read ").removeprefix("engines ")
        if status == "0" or status.startswith("5"):
            check.violations.append(f"{count} x {call}")
    check.facts.append(f"{sum(operations.values())} operator calls")
    return check


def stranded_check(
    stretches: dict[str, list[Stretch]],
    last_fault_ms: int,
    timing: Timing,
    final_unowned: list[str],
) -> Check:
    """A workflow is stranded while it runs, is not parked until a time still ahead, and
    has made no progress for longer than the bound, held or not. A stretch is one past the
    bound already (the watch starts it there), so any of it after the last fault counts."""
    bound = timing.stranded_bound_ms
    check = Check(
        "stranded",
        f"after the last fault, no running workflow went without progress (held or not) for"
        f" longer than TTL + 3 x renew interval ({bound} ms), and at the end every running"
        " workflow is held by a live engine",
    )
    lengths: list[int] = []
    for workflow_id, spans in stretches.items():
        for stretch in spans:
            lengths.append(stretch.last_ms - stretch.first_ms + bound)
            after = stretch.last_ms - max(stretch.first_ms, last_fault_ms)
            if after > 0:
                held = "held, " if stretch.held else ""
                check.violations.append(
                    f"{workflow_id}: no progress ({held}{after} ms past the bound) after the"
                    " last fault"
                )
    for workflow_id in final_unowned:
        check.violations.append(f"{workflow_id}: running at the end without a live owner")
    check.facts.append(
        f"{len(lengths)} stretches without progress past the bound; longest"
        f" {max(lengths, default=0)} ms without progress"
    )
    return check


def ghosts_seen(stretches: dict[str, list[Stretch]], records: list[FaultRecord]) -> list[str]:
    """Held but not driven: per fault kind (the one in force, or last begun, when the
    stretch started), the workflows whose live holder made no progress past the bound, and
    how long each lasted. After the last fault one is a ``stranded`` violation; during the
    faults the report lists them."""
    by_kind: dict[str, list[tuple[int, str]]] = {}
    for workflow_id, spans in stretches.items():
        for stretch in spans:
            if stretch.held:
                length = stretch.last_ms - stretch.first_ms
                kind = _fault_before(records, stretch.first_ms)
                by_kind.setdefault(kind, []).append((length, workflow_id))
    lines = []
    for kind in sorted({r.kind for r in records} | set(by_kind)):
        # The longest first, named, so that their engines' logs can be read for them.
        seen = sorted(by_kind.get(kind, []), key=lambda seen: (-seen[0], seen[1]))
        detail = (
            f": {', '.join(f'{ms} ms ({workflow_id})' for ms, workflow_id in seen[:8])}"
            " past the bound"
            if seen
            else ""
        )
        lines.append(f"{kind}: {len(seen)} ghost holders{detail}")
    return lines


def _fault_before(records: list[FaultRecord], at_ms: int) -> str:
    begun = [r for r in records if r.started_ms <= at_ms]
    return begun[-1].kind if begun else "before any fault"


def metrics_check(
    scrapes: list[dict[str, float]], final: dict[str, float], per_engine: dict[str, float]
) -> Check:
    check = Check(
        "metrics",
        "the fleet counters on /metrics never went down between scrapes, and at the end equal"
        " the sum of the per-engine counter rows",
    )
    for before, after in itertools.pairwise(scrapes):
        for key, value in before.items():
            if after.get(key, 0.0) < value:
                check.violations.append(f"{key} went down from {value} to {after.get(key)}")
    for key, value in per_engine.items():
        if final.get(key) != value:
            check.violations.append(f"{key} is {final.get(key)} on /metrics, {value} per engine")
    check.facts.append(f"{len(scrapes)} scrapes; final counters {_short(final)}")
    return check


def _short(values: dict[str, float]) -> str:
    return ", ".join(
        f"{key.split('{')[1].rstrip('}').removeprefix('outcome=') or key.split('{')[0]}={int(v)}"
        for key, v in sorted(values.items())
    )


@dataclass
class Failover:
    latencies_ms: list[int]
    bound_ms: int
    resumed_by_own_engine: int
    ended_first: int

    def summary(self) -> str:
        if not self.latencies_ms:
            return "no workflow of a killed or stopped engine was re-held"
        over = sum(latency > self.bound_ms for latency in self.latencies_ms)
        return (
            f"{len(self.latencies_ms)} workflows re-held by another engine: median"
            f" {statistics.median(self.latencies_ms):.0f} ms, max {max(self.latencies_ms)} ms"
            f" (bound TTL + 3 x renew interval = {self.bound_ms} ms; {over} over);"
            f" {self.resumed_by_own_engine} resumed by their own engine first,"
            f" {self.ended_first} ended first"
        )


def failover_measure(history: History, records: list[FaultRecord], timing: Timing) -> Failover:
    """Time from an engine's death (kill or stop) until each of its workflows is held again."""
    failover = Failover([], timing.stranded_bound_ms, 0, 0)
    for record in records:
        if record.kind not in ("kill", "pause") or record.engine_id is None:
            continue
        for workflow_id in record.held:
            # Renewals leave no version, so the first change after the death is the answer.
            first = next(
                (v for v in history.claims.get(workflow_id, []) if v.at_ms >= record.started_ms),
                None,
            )
            if first is None or first.holder_engine_id is None:
                failover.ended_first += 1  # released by an operator, cancelled, or unchanged
            elif record.kind == "pause" and first.at_ms > record.ended_ms:
                failover.resumed_by_own_engine += 1
            elif first.holder_engine_id != record.engine_id:
                failover.latencies_ms.append(first.at_ms - record.started_ms)
    return failover
