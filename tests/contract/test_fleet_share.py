"""Beat's share of its reads for the fleet, on both stores: each part stands in for one of an
engine's own reads only when it covers what that read would, and the engine reads for
itself otherwise (claims/protocol/fleet_share.py, docs/design.md §4)."""

from __future__ import annotations

from typing import Any

import pytest

from claims.protocol import ClaimMetrics, ClaimRegistry, ReclaimTarget, SessionLeases
from claims.protocol.fleet_share import SHARE_LIMIT, FleetShare
from claims.protocol.passes import run_reclaim_pass
from claims.protocol.session_lease import EngineSessionLease
from claims.protocol.transitions import rotate_claim

from .stores import LAPSED, START_MS, TTL_MS, CountingStore

T0 = START_MS
DISCOVERY_READS = {"find_stale_holders", "list_unheld_running_indexed", "scan_unheld_running"}
AUDIT_INTERVAL_MS = TTL_MS // 3


def quiet(now_ms: int, **parts: Any) -> FleetShare:
    parts.setdefault("unheld", ())
    parts.setdefault("scanned", ())
    return FleetShare(read_at_ms=now_ms, quiet_until_ms=now_ms + 5_000, **parts)


def audited_target(registry: Any, reclaim_target: Any, store: Any, clock: Any) -> tuple:
    """A target whose first pass (and its full audit) is behind it, on a counting store,
    at the time its next audit is due."""
    counting = CountingStore(store)
    target = reclaim_target(registry("a", on=counting), on=counting)
    target.list_candidates()
    clock.advance(AUDIT_INTERVAL_MS)
    counting.calls.clear()
    return target, counting


def test_a_quiet_share_stands_in_for_every_discovery_read(
    registry, workflows, reclaim_target, store, clock
):
    target, counting = audited_target(registry, reclaim_target, store, clock)
    now = clock()
    share = quiet(now, unheld=("u-marked",), scanned=("s-scanned",), grants_since_ms=0, grants=())

    candidates = target.list_candidates(share)

    assert candidates == ["s-scanned", "u-marked"]
    assert not DISCOVERY_READS & set(counting.calls)
    assert "list_granted_to" not in counting.calls
    discovery = target.last_discovery
    assert (discovery.unheld_indexed, discovery.authoritative_scan) == (1, 1)
    assert discovery.must_attempt == 1  # beat's page: attempted whatever the budget


def test_a_share_that_is_not_quiet_leaves_the_stale_holders_to_the_engine(
    registry, arrange, workflows, reclaim_target, store, clock
):
    arrange.put_row("z-stale", epoch=1, holder=LAPSED)
    workflows.put("z-stale", indexed=True)
    target, counting = audited_target(registry, reclaim_target, store, clock)
    now = clock()
    loud = FleetShare(read_at_ms=now, quiet_until_ms=None, unheld=(), scanned=())
    expired = quiet(now - 5_000)  # quiet until now: no longer

    assert target.list_candidates(loud) == ["z-stale"]
    assert target.list_candidates(expired) == ["z-stale"]
    assert counting.calls.count("find_stale_holders") == 2
    assert "list_unheld_running_indexed" not in counting.calls


def test_a_share_from_the_future_is_not_trusted(registry, reclaim_target, store, clock):
    """Beat's clock ahead of this engine's: its quiet proof starts after this engine's now."""
    target, counting = audited_target(registry, reclaim_target, store, clock)
    target.list_candidates(quiet(clock() + 1))
    assert "find_stale_holders" in counting.calls


def test_parts_left_out_of_a_share_are_read_by_the_engine(
    registry, workflows, reclaim_target, store, clock
):
    workflows.put("u-marked", indexed=True)
    workflows.put("s-scanned", indexed=False)
    target, counting = audited_target(registry, reclaim_target, store, clock)
    share = FleetShare(read_at_ms=clock(), quiet_until_ms=clock() + 5_000)

    candidates = target.list_candidates(share)

    assert set(candidates) == {"u-marked", "s-scanned"}
    assert {"list_unheld_running_indexed", "scan_unheld_running"} <= set(counting.calls)
    assert "find_stale_holders" not in counting.calls


def test_grants_stand_in_for_the_audit_only_when_they_reach_back_a_ttl_before_the_last(
    registry, arrange, workflows, reclaim_target, store, clock
):
    """A row naming "a" that "a" does not hold (an adopt order lost) is found from beat's
    grants; grants that start later than the engine's own read would are not used."""
    target, counting = audited_target(registry, reclaim_target, store, clock)
    last_audit = clock() - AUDIT_INTERVAL_MS
    covering = quiet(clock(), grants_since_ms=last_audit - TTL_MS, grants=("g-granted",))

    assert target.list_candidates(covering) == ["g-granted"]
    assert target.last_discovery.must_attempt == 1  # only this engine can settle it
    assert "list_granted_to" not in counting.calls

    clock.advance(AUDIT_INTERVAL_MS)
    short = quiet(clock(), grants_since_ms=clock() - AUDIT_INTERVAL_MS - TTL_MS + 1, grants=())
    target.list_candidates(short)
    assert counting.calls.count("list_granted_to") == 1


def test_an_audit_due_at_once_reads_for_itself_whatever_the_share(
    registry, reclaim_target, store, clock
):
    """After a takeover by session whose answer was lost, the grant looked for may have
    landed after beat read: the engine reads its grants itself."""
    target, counting = audited_target(registry, reclaim_target, store, clock)
    target.registry.audit_due = True
    target.list_candidates(quiet(clock(), grants_since_ms=0, grants=()))
    assert counting.calls.count("list_granted_to") == 1


def test_the_pass_asks_may_attempt_only_when_there_is_something_to_attempt(
    registry, workflows, reclaim_target, clock
):
    workflows.put("u-marked", indexed=True)
    target = reclaim_target(registry("a"))
    asked: list[bool] = []

    def refuse() -> bool:
        asked.append(False)
        return False

    target.list_candidates()  # the first, full audit
    idle = run_reclaim_pass(target, share=quiet(clock()), may_attempt=refuse)
    assert (idle.status, asked) == ("completed", [])

    refused = run_reclaim_pass(
        target, share=quiet(clock(), unheld=("u-marked",)), may_attempt=refuse
    )
    assert (refused.status, asked) == ("refused", [False])
    assert target.registry.held_workflow_ids() == []

    taken = run_reclaim_pass(target, share=quiet(clock(), unheld=("u-marked",)))
    assert taken.status == "completed"
    assert target.registry.held_workflow_ids() == ["u-marked"]


# -- the moves, under a session -----------------------------------------------------------


def session_engine(store: Any, clock: Any, timing: Any, engine_id: str) -> ClaimRegistry:
    session = EngineSessionLease(store, engine_id=engine_id, clock=clock, timing=timing)
    return ClaimRegistry(
        store,
        engine_id=engine_id,
        clock=clock,
        timing=timing,
        metrics=ClaimMetrics(),
        liveness=SessionLeases(session),
    )


def test_moves_stand_in_for_the_engines_read_when_they_reach_back_far_enough(store, clock, timing):
    counting = CountingStore(store)
    owner = session_engine(counting, clock, timing, "engine-a")
    for workflow_id in ("wf-1", "wf-2", "wf-3"):
        assert owner.acquire(workflow_id).status == "acquired"
    assert owner.forget_moved_claims() == 0  # the engine's first look: its own read
    first_look = clock()
    clock.advance(5_000)
    rotate_claim(store, "wf-1", clock=clock, kind="forced_release", actor="op")
    epoch = store.read_claim("wf-1").epoch
    counting.calls.clear()

    # Beat's moves start a millisecond after what the engine's read would cover: not used.
    late = FleetShare(
        read_at_ms=clock(), moves_since_ms=first_look - TTL_MS + 1, moves=(("wf-2", 99),)
    )
    assert owner.forget_moved_claims(late) == 1  # its own read found wf-1, not wf-2
    assert counting.calls.count("read_claim_moves") == 1
    assert sorted(owner.held_workflow_ids()) == ["wf-2", "wf-3"]

    clock.advance(5_000)
    counting.calls.clear()
    covering = FleetShare(
        read_at_ms=clock(), moves_since_ms=0, moves=(("wf-1", epoch), ("wf-2", 99))
    )
    assert owner.forget_moved_claims(covering) == 1
    assert "read_claim_moves" not in counting.calls
    assert owner.held_workflow_ids() == ["wf-3"]


def test_a_session_that_lived_and_closed_while_shares_were_quiet_is_found_after(
    store, clock, timing, reclaim_target
):
    """An engine spared its own reads by quiet shares has not seen the sessions that opened
    since; one that closed (an engine stopping, its claims stale at once) is found by the
    engine's next own read all the same."""
    watcher = reclaim_target(session_engine(store, clock, timing, "engine-a"))
    watcher.list_candidates()  # its own read: no session but its own
    for _ in range(3):  # quiet ticks: no read of its own
        clock.advance(timing.renew_interval_ms)
        watcher.list_candidates(quiet(clock()))
    stopping = session_engine(store, clock, timing, "engine-e")
    assert stopping.acquire("wf-e").status == "acquired"
    stopping.release_all()  # closes its session: wf-e's holder is stale now
    clock.advance(timing.renew_interval_ms)

    loud = FleetShare(read_at_ms=clock(), quiet_until_ms=None, unheld=(), scanned=())
    assert "wf-e" in watcher.list_candidates(loud)


# -- the share as a tick carries it --------------------------------------------------------


def test_a_page_carried_into_a_later_share_keeps_both_pages_once():
    earlier = FleetShare(read_at_ms=1, quiet_until_ms=9, unheld=("u",), scanned=("a", "b"))
    later = FleetShare(read_at_ms=5, quiet_until_ms=9, scanned=("b", "c"))
    assert later.with_earlier_page(earlier).scanned == ("a", "b", "c")
    assert later.with_earlier_page(FleetShare(read_at_ms=1)) is later
    assert earlier.page_only() == FleetShare(read_at_ms=1, scanned=("a", "b"))


def test_a_share_survives_its_json_and_a_misshapen_one_is_refused_whole():
    share = FleetShare(
        read_at_ms=5,
        quiet_until_ms=9,
        unheld=("a",),
        scanned=(),
        moves_since_ms=1,
        moves=(("b", 3),),
        grants_since_ms=2,
        grants=("c",),
        due=("d",),
    )
    assert FleetShare.from_json(share.as_json()) == share
    assert FleetShare.from_json(FleetShare(read_at_ms=5).as_json()) == FleetShare(read_at_ms=5)
    good = share.as_json()
    for bad in (
        None,
        [],
        {},
        {**good, "read_at_ms": True},
        {**good, "read_at_ms": "5"},
        {**good, "quiet_until_ms": 1.5},
        {**good, "unheld": "a"},
        {**good, "unheld": [1]},
        {**good, "due": ["x"] * (SHARE_LIMIT + 1)},
        {**good, "moves": [["b"]]},
        {**good, "moves": [["b", "3"]]},
        {k: v for k, v in good.items() if k != "moves_since_ms"},
        {k: v for k, v in good.items() if k != "grants"},
    ):
        assert FleetShare.from_json(bad) is None, bad


@pytest.mark.parametrize(
    ("now", "expected"), [(4, False), (5, True), (8, True), (9, False), (10, False)]
)
def test_a_share_is_quiet_from_beats_read_until_its_quiet_time(now: int, expected: bool):
    assert FleetShare(read_at_ms=5, quiet_until_ms=9).quiet_at(now) is expected
    assert FleetShare(read_at_ms=5).quiet_at(now) is False


def test_a_reclaim_target_without_a_share_reads_as_it_always_did(registry, reclaim_target, store):
    counting = CountingStore(store)
    target = ReclaimTarget(registry("a", on=counting), counting)
    target.list_candidates()
    assert set(counting.calls) >= DISCOVERY_READS
