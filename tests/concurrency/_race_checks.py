"""Judge a claim race after the fact: the ClaimEvent log, the final rows and every result seen.

Every grant, rotation and release writes its ClaimEvent in the transaction of its
compare-and-swap, and every CAS on one workflow locks its row, so per workflow the
event ids are in commit order: the log can be replayed as the history of the row.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from claims.models import ClaimEvent
from claims.protocol import ClaimTiming, is_claim_expired
from tests.factories import claim_values

from ._race_engine import RENEW_INTERVAL_MS, TTL_MS

TIMING = ClaimTiming(ttl_ms=TTL_MS, renew_interval_ms=RENEW_INTERVAL_MS)

GRANT_KINDS = ("acquired", "takeover", "rotated")
# Statuses whose epoch is the row's epoch at the moment the call linearised.
OBSERVED_NOW = ("acquired", "rotated", "renewed", "released", "not-expired", "no-claim")
MINTING = ("acquired", "rotated")


class Grant(NamedTuple):
    kind: str  # acquired, takeover or rotated
    engine: str | None  # None for a rotation: it leaves no holder
    at_ms: int  # the clock reading the grant was judged and stamped with


@dataclass
class Replay:
    """The history of each workflow's claim, rebuilt from its events."""

    grants: dict[str, dict[int, Grant]] = field(default_factory=dict)
    epoch: dict[str, int | None] = field(default_factory=dict)
    holder: dict[str, str | None] = field(default_factory=dict)
    events: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    # (kind, workflow_id, epoch, engine) of every event, for matching against results
    keys: Counter[tuple[str, str, int | None, str | None]] = field(default_factory=Counter)


def replay_events(workflow_ids: list[str]) -> Replay:
    """Replay the log; check 1 (epochs +1 from 1) and the row's final state (check 3)."""
    replay = Replay()
    fail = replay.failures.append
    by_workflow: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    for event in (
        ClaimEvent.objects.order_by("id")
        .values_list(
            "id", "workflow_id", "kind", "epoch_before", "epoch_after", "engine_id", "at_ms"
        )
        .iterator()
    ):
        by_workflow[event[1]].append(event)
    unknown = set(by_workflow) - set(workflow_ids)
    if unknown:
        fail(f"events for workflows nobody raced: {sorted(unknown)}")

    for workflow_id in workflow_ids:
        epoch: int | None = None
        holder: str | None = None
        grants: dict[int, Grant] = {}
        for event_id, _, kind, before, after, engine, at_ms in by_workflow.get(workflow_id, []):
            where = f"{workflow_id} event #{event_id} {kind} {before}->{after} by {engine}"
            replay.events[kind] += 1
            if kind in GRANT_KINDS:
                replay.keys[(kind, workflow_id, after, engine)] += 1
                expected_after = 1 if epoch is None else epoch + 1
                if before != epoch or after != expected_after:
                    fail(f"{where}: expected {epoch}->{expected_after}")
                if after in grants:
                    fail(f"{where}: epoch {after} granted twice (first {grants[after]})")
                if kind == "acquired" and holder is not None:
                    fail(f"{where}: acquired while {holder} held epoch {epoch}")
                if kind == "takeover" and holder is None:
                    fail(f"{where}: took over a claim nobody held")
                if kind == "rotated" and engine is not None:
                    fail(f"{where}: a plain rotation must leave no holder")
                grants[after] = Grant(kind, engine, at_ms)
                epoch, holder = after, engine
            elif kind == "released":
                replay.keys[(kind, workflow_id, before, engine)] += 1
                if before != epoch or after != epoch or holder != engine or engine is None:
                    fail(f"{where}: release of a claim not held (row {epoch} held by {holder})")
                holder = None
            elif kind == "deposed":
                # Written after the failed renewal, outside its CAS: the epoch had moved on.
                replay.keys[(kind, workflow_id, before, engine)] += 1
                if before is None or epoch is None or before >= epoch:
                    fail(f"{where}: deposed, yet the row is still at epoch {epoch}")
                elif before not in grants or grants[before].engine != engine:
                    fail(f"{where}: epoch {before} was never granted to {engine}")
            else:
                fail(f"{where}: unexpected event kind in this race")
        replay.grants[workflow_id] = grants
        replay.epoch[workflow_id] = epoch
        replay.holder[workflow_id] = holder

    rows = {row[0]: row[1:] for row in claim_values()}
    for workflow_id in workflow_ids:
        row = rows.get(workflow_id)
        epoch = replay.epoch[workflow_id]
        if row is None:
            if epoch is not None:
                fail(f"{workflow_id}: events reach epoch {epoch} but there is no row")
            continue
        row_epoch, engine, holder_epoch, expires_at, claimed_at, session_epoch = row
        if row_epoch != epoch:
            fail(f"{workflow_id}: row at epoch {row_epoch}, last event at {epoch}")
        if engine != replay.holder[workflow_id]:
            fail(f"{workflow_id}: row held by {engine}, events say {replay.holder[workflow_id]}")
        rest = (holder_epoch, expires_at, claimed_at, session_epoch)
        if engine is None and rest != (None,) * len(rest):
            fail(f"{workflow_id}: half-cleared holder {row}")
        if engine is not None and holder_epoch != row_epoch:
            fail(f"{workflow_id}: holder epoch {holder_epoch} != row epoch {row_epoch}")
    return replay


def check_race(reports: list[dict[str, Any]], workflow_ids: list[str]) -> dict[str, Any]:
    """Checks 1-4 of the race; returns a summary. Raises AssertionError listing every failure."""
    replay = replay_events(workflow_ids)
    failures = replay.failures
    fail = failures.append
    grants = replay.grants
    final_epoch = replay.epoch

    def granted_to(workflow_id: str, epoch: int | None) -> str | None:
        if epoch is None:
            return None
        grant = grants[workflow_id].get(epoch)
        return None if grant is None or grant.kind == "rotated" else grant.engine

    seen: Counter[tuple[str, str, int | None, str | None]] = Counter()
    statuses: Counter[str] = Counter()
    renewed_until: dict[tuple[str, int], int] = {}  # (workflow, epoch) -> latest expiry set
    for report in reports:
        engine_id = report["engine"]
        last_seen: dict[str, int] = {}
        for op, workflow_id, status, epoch, engine, held_by, expires_at in report["results"]:
            statuses[f"{op}:{status}"] += 1
            where = f"{engine} {op}({workflow_id}) -> {status} @ {epoch}"
            if engine != engine_id:
                fail(f"{where}: recorded under {engine_id}")
            # Check 2: every grant, rotation and release seen matches exactly one event.
            if status == "acquired":
                kind = "acquired" if op == "acquire" else "takeover"
                seen[(kind, workflow_id, epoch, engine)] += 1
            elif status == "rotated":
                seen[("rotated", workflow_id, epoch, None)] += 1
            elif status == "released":
                seen[("released", workflow_id, epoch, engine)] += 1
            elif status == "lost":
                seen[("deposed", workflow_id, epoch, engine)] += 1
            # Check 4: a renewal, loss or release only ever concerns an epoch granted to me.
            if (
                status in ("renewed", "lost", "released")
                or (op.startswith("release") and status in ("lost-race", "not-held") and epoch)
            ) and granted_to(workflow_id, epoch) != engine:
                fail(f"{where}: epoch {epoch} was granted to {granted_to(workflow_id, epoch)}")
            if status in ("lost", "lost-race") and op.startswith(("renew", "release")):
                current = final_epoch[workflow_id]
                if epoch is None or current is None or current <= epoch:
                    fail(f"{where}: lost, yet the epoch never moved past {epoch}")
            if status == "renewed":
                grant_key = (workflow_id, epoch)
                renewed_until[grant_key] = max(renewed_until.get(grant_key, 0), expires_at)
            if status == "not-expired" and granted_to(workflow_id, epoch) != held_by:
                fail(f"{where}: not-expired held by {held_by}, but epoch granted otherwise")
            # One engine's calls are sequential and the epoch only grows: what it observes
            # of a workflow's current epoch never goes back, and what it mints is new.
            if status in OBSERVED_NOW and epoch is not None:
                seen_before = last_seen.get(workflow_id, 0)
                if epoch < seen_before or (status in MINTING and epoch == seen_before):
                    fail(f"{where}: after this engine already saw epoch {seen_before}")
                last_seen[workflow_id] = epoch

    expected = Counter(
        {
            key: n
            for key, n in replay.keys.items()
            if key[0] in (*GRANT_KINDS, "released", "deposed")
        }
    )
    for key in sorted(set(seen) | set(expected), key=str):
        if seen[key] != expected[key]:
            fail(f"{key}: {seen[key]} results seen but {expected[key]} events written")

    # Check 6: a takeover only ever steals an expired claim. It judged expiry at its
    # event's at_ms; the grant it replaced and every renewal of that grant that
    # succeeded (so committed before the takeover's CAS) must be expired by then.
    takeovers_judged = 0
    for workflow_id, by_epoch in grants.items():
        for epoch, grant in by_epoch.items():
            previous = by_epoch.get(epoch - 1)
            if grant.kind != "takeover" or previous is None:
                continue
            takeovers_judged += 1
            latest = max(previous.at_ms + TTL_MS, renewed_until.get((workflow_id, epoch - 1), 0))
            if not is_claim_expired(latest, grant.at_ms, TIMING):
                fail(
                    f"{workflow_id}: takeover to epoch {epoch} at {grant.at_ms} stole a claim "
                    f"of {previous.engine} valid until {latest} (+ grace)"
                )

    # Check 3: what each engine ended up believing agrees with the final rows.
    believers: dict[tuple[str, int], list[str]] = defaultdict(list)
    for report in reports:
        engine_id = report["engine"]
        for workflow_id, epoch in report["held"]:
            current = final_epoch.get(workflow_id)
            if granted_to(workflow_id, epoch) != engine_id:
                fail(f"{engine_id} ends holding {workflow_id}@{epoch}, never granted to it")
            if current is None or epoch > current:
                fail(f"{engine_id} ends holding {workflow_id}@{epoch} beyond row epoch {current}")
            elif epoch == current:
                believers[(workflow_id, epoch)].append(engine_id)
                if replay.holder[workflow_id] != engine_id:
                    fail(
                        f"{engine_id} ends holding {workflow_id}@{epoch}, "
                        f"the row says {replay.holder[workflow_id]}"
                    )
    for (workflow_id, epoch), engines in believers.items():
        if len(engines) > 1:
            fail(f"{workflow_id}@{epoch} believed held by {engines}")

    cas_failures: Counter[str] = Counter()
    for report in reports:
        cas_failures.update(report["cas_failures"])
    summary = {
        "ops": sum(report["ops"] for report in reports),
        "results": dict(sorted(statuses.items())),
        "events": dict(sorted(replay.events.items())),
        "cas_failures": dict(cas_failures),
        "final_epochs": sum(epoch or 0 for epoch in final_epoch.values()),
        "held_at_end": sum(len(engines) for engines in believers.values()),
        "takeovers_judged": takeovers_judged,
    }
    assert not failures, (
        f"{len(failures)} inconsistencies, first ones:\n"
        + "\n".join(failures[:40])
        + f"\n{summary}"
    )
    return summary


def assert_race_had_teeth(summary: dict[str, Any]) -> None:
    """Check 5: enough happened that the checks above meant something."""
    events = summary["events"]
    results = summary["results"]
    lost_races = results.get("acquire:lost-race", 0) + results.get("takeover:lost-race", 0)
    assert events.get("acquired", 0) >= 50, summary
    assert events.get("takeover", 0) >= 20, summary
    assert events.get("rotated", 0) >= 5, summary
    assert events.get("released", 0) >= 10, summary
    assert events.get("deposed", 0) >= 5, summary
    assert results.get("renew:renewed", 0) >= 10, summary
    assert lost_races >= 10, summary
    assert sum(summary["cas_failures"].values()) >= 1, summary
