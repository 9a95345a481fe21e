"""ReclaimTarget.list_candidates(): the three reclaim sources and the shared cursor
(docs/design.md §4)."""

from __future__ import annotations

import random

import pytest

from claims.protocol import AUTHORITATIVE_SCAN_LIMIT, Holder

from .stores import GRACE_MS, LAPSED, START_MS, TTL_MS, CountingStore, strand

T0 = START_MS
EXPIRY = T0 + TTL_MS


def live_holder(engine_id: str = "b", epoch: int = 1) -> Holder:
    return Holder(engine_id, epoch, EXPIRY, T0)


# -- order, de-duplication, exclusions ------------------------------------------------


def test_candidates_come_in_source_order_once_each(registry, arrange, workflows, reclaim_target):
    """The scan's page comes first (no budget defers it), then the shared window: stale
    holders, then running-unheld from the index; each id once."""
    arrange.put_row("z-stale", epoch=1, holder=LAPSED)
    workflows.put("z-stale", indexed=True)
    workflows.put("m-indexed", indexed=True)  # also read by the scan: must appear once
    workflows.put("a-scanned", indexed=False)

    target = reclaim_target(registry("a"))
    candidates = target.list_candidates()

    assert candidates == ["a-scanned", "m-indexed", "z-stale"]
    assert target.last_discovery.must_attempt == 2


def test_candidates_leave_out_ids_this_engine_holds(
    registry, arrange, workflows, reclaim_target, clock
):
    """An id this engine holds is never a candidate of its own, even when its holder lapsed."""
    a = registry("a")
    workflows.put("mine")
    assert a.acquire("mine").status == "acquired"
    clock.set(EXPIRY + GRACE_MS + 1)

    assert reclaim_target(a).list_candidates() == []
    assert reclaim_target(registry("b")).list_candidates() == ["mine"]


def test_pending_redrives_come_before_the_shared_window(
    registry, arrange, workflows, reclaim_target
):
    """A pending re-drive is a candidate though the engine holds it, after the scan's page
    and before the shared window: no budget defers it."""
    a = registry("a")
    workflows.put("a-redrive")

    def fail(workflow_id):
        raise RuntimeError("runtime down")

    target = reclaim_target(a, on_reclaimed=fail)
    with pytest.raises(RuntimeError):
        target.attempt("a-redrive")
    arrange.put_row("z-stale", epoch=1, holder=LAPSED)
    workflows.put("y-indexed", indexed=True)
    workflows.put("x-scanned", indexed=False)

    assert target.list_candidates() == ["x-scanned", "y-indexed", "a-redrive", "z-stale"]
    assert target.last_discovery.must_attempt == 3


# -- source 1: stale and invalid holders ------------------------------------------------


def test_stale_holder_source_uses_exactly_the_expiry_rule(
    registry, arrange, workflows, reclaim_target, clock
):
    """A holder at exactly expires + 2 x renew interval is no candidate; 1 ms later it is."""
    arrange.put_row("wf", epoch=1, holder=live_holder())
    workflows.put("wf")
    target = reclaim_target(registry("a"))

    clock.set(EXPIRY + GRACE_MS)
    assert target.list_candidates() == []
    assert target.attempt("wf") == "not-eligible"

    clock.set(EXPIRY + GRACE_MS + 1)
    assert target.list_candidates() == ["wf"]
    assert target.attempt("wf") == "reclaimed"


INVALID_HOLDERS = {
    "blank engine": (1, Holder("", 1, EXPIRY, T0)),
    "null engine": (1, Holder(None, 1, EXPIRY, T0)),
    "holder epoch above epoch": (1, Holder("b", 2, EXPIRY, T0)),
    "holder epoch below epoch": (3, Holder("b", 2, EXPIRY, T0)),
    "null holder epoch": (1, Holder("b", None, EXPIRY, T0)),
    "negative expiry": (1, Holder("b", 1, -1, T0)),
    "negative claimed at": (1, Holder("b", 1, EXPIRY, -1)),
    "expiry 2^53": (1, Holder("b", 1, 2**53, T0)),
    "claimed at 2^53": (1, Holder("b", 1, EXPIRY, 2**53)),
    "null expiry": (1, Holder("b", 1, None, T0)),
}


@pytest.mark.parametrize(("epoch", "holder"), INVALID_HOLDERS.values(), ids=INVALID_HOLDERS.keys())
def test_invalid_holders_are_candidates_before_they_would_expire(
    registry, arrange, workflows, reclaim_target, epoch, holder
):
    """A garbage holder (blank engine, epoch mismatch, bad timestamps) is a candidate at once."""
    arrange.put_row("wf", epoch=epoch, holder=holder)
    workflows.put("wf")

    assert reclaim_target(registry("a")).list_candidates() == ["wf"]


VALID_LIVE_HOLDERS = {
    "live": live_holder(),
    "largest safe expiry": Holder("b", 1, 2**53 - 1, T0),
    "valid holder at epoch 7": Holder("b", 7, EXPIRY, T0),
}


@pytest.mark.parametrize("holder", VALID_LIVE_HOLDERS.values(), ids=VALID_LIVE_HOLDERS.keys())
def test_valid_live_holders_are_no_candidates(registry, arrange, workflows, reclaim_target, holder):
    """A valid foreign holder that has not expired is found by no source."""
    arrange.put_row("wf", epoch=holder.epoch, holder=holder)
    workflows.put("wf", indexed=True)

    assert reclaim_target(registry("a")).list_candidates() == []


# -- source 2: the visibility index -------------------------------------------------------


def test_index_source_finds_running_workflows_with_no_claim_or_no_holder(
    registry, arrange, workflows, reclaim_target
):
    """The index yields running workflows with no claim row or a null holder, nothing else."""
    # Five held fillers sort first and use up the whole scan page, so the scan reads
    # none of the workflows below: whatever is found comes from the index.
    for i in range(5):
        workflows.put(f"a-filler-{i}", indexed=False)
        arrange.put_row(f"a-filler-{i}", epoch=1, holder=live_holder())
    workflows.put("n-no-row", indexed=True)
    workflows.put("r-released", indexed=True)
    arrange.put_row("r-released", epoch=4, holder=None)
    workflows.put("h-held", indexed=True)
    arrange.put_row("h-held", epoch=2, holder=live_holder(epoch=2))
    for status in ("pending", "suspended", "completed", "failed", "cancelled", "timed_out"):
        workflows.put(f"s-{status}", status=status, indexed=True)
    target = reclaim_target(registry("a"), scan_limit=5)

    candidates = target.list_candidates()

    assert sorted(candidates) == ["n-no-row", "r-released"]
    assert len(candidates) == 2
    assert workflows.cursor() == ("a-filler-4", 0, 5)


# -- source 3: the bounded authoritative scan ---------------------------------------------


def _scan_fixture(arrange, workflows):
    """Twelve un-indexed workflows w-00..w-11; running and unheld unless noted."""
    workflows.put_many([f"w-{i:02d}" for i in range(12)], indexed=False)
    workflows.set_status("w-02", "completed")
    arrange.put_row("w-03", epoch=1, holder=live_holder())
    arrange.put_row("w-07", epoch=5, holder=None)  # released earlier: still a candidate
    workflows.set_status("w-10", "pending")


def test_scan_reads_at_most_limit_rows_after_the_cursor_and_wraps_when_short(
    registry, arrange, workflows, reclaim_target
):
    """Each pass reads at most ``limit`` rows in key order after the cursor; a short page wraps."""
    _scan_fixture(arrange, workflows)
    target = reclaim_target(registry("a"), scan_limit=5)

    assert target.list_candidates() == ["w-00", "w-01", "w-04"]
    assert workflows.cursor() == ("w-04", 0, 5)
    assert target.list_candidates() == ["w-05", "w-06", "w-07", "w-08", "w-09"]
    assert workflows.cursor() == ("w-09", 0, 10)
    assert target.list_candidates() == ["w-11"]
    assert workflows.cursor() == (None, 1, 12)
    assert target.list_candidates() == ["w-00", "w-01", "w-04"]
    assert workflows.cursor() == ("w-04", 1, 17)


def test_scan_wraps_on_the_empty_page_after_an_exact_fit(registry, workflows, reclaim_target):
    """A full last page moves the cursor to its last id; the next, empty, read wraps."""
    workflows.put_many([f"w-{i:02d}" for i in range(10)], indexed=False)
    target = reclaim_target(registry("a"), scan_limit=5)

    assert target.list_candidates() == ["w-00", "w-01", "w-02", "w-03", "w-04"]
    assert target.list_candidates() == ["w-05", "w-06", "w-07", "w-08", "w-09"]
    assert workflows.cursor() == ("w-09", 0, 10)
    assert target.list_candidates() == []
    assert workflows.cursor() == (None, 1, 10)
    assert target.list_candidates() == ["w-00", "w-01", "w-02", "w-03", "w-04"]
    assert workflows.cursor() == ("w-04", 1, 15)


def test_scan_cursor_is_shared_by_every_engine_and_survives_a_restart(
    registry, arrange, workflows, reclaim_target, store_kind, clock
):
    """A second engine, then a restarted one, continue the one persisted "default" cursor."""
    _scan_fixture(arrange, workflows)

    assert reclaim_target(registry("a"), scan_limit=5).list_candidates() == [
        "w-00",
        "w-01",
        "w-04",
    ]
    clock.advance(1_000)
    assert reclaim_target(registry("c"), scan_limit=5).list_candidates() == [
        "w-05",
        "w-06",
        "w-07",
        "w-08",
        "w-09",
    ]
    assert workflows.cursor() == ("w-09", 0, 10)
    if store_kind == "orm":
        from claims.models import ReclaimCursor

        (row,) = ReclaimCursor.objects.all()
        assert (row.name, row.last_workflow_id, row.wraps, row.scanned_total) == (
            "default",
            "w-09",
            0,
            10,
        )
        assert (row.updated_by, row.updated_at_ms) == ("c", T0 + 1_000)

    restarted = reclaim_target(registry("a-restarted"), scan_limit=5)
    assert restarted.list_candidates() == ["w-11"]
    assert workflows.cursor() == (None, 1, 12)


def test_scan_reads_500_rows_per_pass_by_default(registry, workflows, reclaim_target):
    """With the default limit, 1,200 un-indexed workflows take three passes: 500, 500, then 200."""
    ids = [f"wf-{i:05d}" for i in range(1_200)]
    running = [wf for i, wf in enumerate(ids) if i % 3 == 0]
    workflows.put_many(running, indexed=False)
    workflows.put_many(
        [wf for i, wf in enumerate(ids) if i % 3 != 0], status="completed", indexed=False
    )
    target = reclaim_target(registry("a"))
    assert AUTHORITATIVE_SCAN_LIMIT == 500

    assert target.list_candidates() == [wf for wf in running if wf < "wf-00500"]
    assert workflows.cursor() == ("wf-00499", 0, 500)
    assert target.list_candidates() == [wf for wf in running if "wf-00500" <= wf < "wf-01000"]
    assert workflows.cursor() == ("wf-00999", 0, 1_000)
    assert target.list_candidates() == [wf for wf in running if wf >= "wf-01000"]
    assert workflows.cursor() == (None, 1, 1_200)


def test_a_paced_scan_reads_one_page_per_pace_for_the_whole_fleet(
    registry, workflows, reclaim_target, clock
):
    """Engines on the same tick share one page; the next is read once the pace has passed,
    by whichever engine comes first; a pace of 0 reads a page every pass."""
    workflows.put_many([f"w-{i:02d}" for i in range(12)], indexed=False)
    a, b = (reclaim_target(registry(name), scan_limit=4, scan_paced_ms=2_500) for name in "ab")

    assert a.list_candidates() == ["w-00", "w-01", "w-02", "w-03"]
    assert b.list_candidates() == []
    assert (b.last_discovery.scanned, b.last_discovery.wrapped) == (0, False)
    clock.advance(2_499)
    assert a.list_candidates() == []
    assert workflows.cursor() == ("w-03", 0, 4)
    clock.advance(1)
    assert b.list_candidates() == ["w-04", "w-05", "w-06", "w-07"]
    assert a.list_candidates() == []

    unpaced = reclaim_target(registry("c"), scan_limit=4)
    assert unpaced.list_candidates() == ["w-08", "w-09", "w-10", "w-11"]
    assert workflows.cursor() == ("w-11", 0, 12)


def test_a_cursor_moved_in_this_engines_future_paces_it_until_its_clock_passes_the_pace(
    registry, store, workflows, reclaim_target, clock
):
    """Another engine's clock ahead of this one: the wait is bounded by the skew."""
    workflows.put_many([f"w-{i:02d}" for i in range(8)], indexed=False)
    ahead = store.scan_unheld_running(
        cursor_name="default", limit=4, scanned_by="a", now_ms=clock() + 3_000, paced_ms=2_500
    )
    assert ahead.candidates == ["w-00", "w-01", "w-02", "w-03"]
    behind = reclaim_target(registry("b"), scan_limit=4, scan_paced_ms=2_500)

    assert behind.list_candidates() == []
    clock.advance(5_499)
    assert behind.list_candidates() == []
    clock.advance(1)
    assert behind.list_candidates() == ["w-04", "w-05", "w-06", "w-07"]


def test_a_pass_attempts_a_window_of_many_shared_candidates_from_a_random_place(
    registry, arrange, workflows, reclaim_target
):
    """Ten stranded (by engine b), a limit of four: four in key order from the place the
    engine's random source draws, wrapping round; the other six are deferred, not dropped."""
    ids = strand(arrange, workflows, 10)
    windows = {}
    for name, seed in (("c", 5), ("d", 7)):
        target = reclaim_target(registry(name), shared_candidate_limit=4, rng=random.Random(seed))
        start = random.Random(seed).randrange(10)
        windows[name] = target.list_candidates()
        assert windows[name] == (ids + ids)[start : start + 4]
        assert target.last_discovery.stale_holders == 10
        assert target.last_discovery.deferred == 6
    assert set(windows["c"]).isdisjoint(windows["d"])  # 9, 0, 1, 2 and 5, 6, 7, 8


def test_what_fits_the_window_comes_whole_and_in_source_order(
    registry, arrange, workflows, reclaim_target
):
    ids = strand(arrange, workflows, 4)
    target = reclaim_target(registry("a"), shared_candidate_limit=4, rng=random.Random(5))

    assert target.list_candidates() == ids
    assert target.last_discovery.deferred == 0


def test_the_scan_page_is_never_deferred(registry, arrange, workflows, reclaim_target):
    """Only this engine read the page, and the cursor has moved on: all of it is attempted."""
    strand(arrange, workflows, 10)
    workflows.put_many(["u-1", "u-2", "u-3"], indexed=False)
    target = reclaim_target(registry("a"), shared_candidate_limit=2, rng=random.Random(5))

    candidates = target.list_candidates()

    assert len(candidates) == 5
    assert candidates[:3] == ["u-1", "u-2", "u-3"]
    assert target.last_discovery.must_attempt == 3
    assert target.last_discovery.deferred == 8


def test_candidates_only_this_engine_can_settle_are_never_deferred(
    registry, arrange, workflows, reclaim_target, clock
):
    """A row naming this engine that it does not hold joins whatever window was drawn."""
    strand(arrange, workflows, 10)
    workflows.put("mine")
    arrange.put_row("mine", epoch=7, holder=Holder("a", 7, EXPIRY, T0))
    target = reclaim_target(registry("a"), shared_candidate_limit=2, rng=random.Random(5))

    candidates = target.list_candidates()

    assert len(candidates) == 3
    assert candidates[0] == "mine"
    assert target.last_discovery.must_attempt == 1
    assert target.last_discovery.mine_unheld == 1


# -- disposal -----------------------------------------------------------------------------


def test_list_candidates_is_empty_once_disposing_and_touches_nothing(
    registry, arrange, store, workflows, reclaim_target
):
    """Once disposing, discovery answers [] with no store call, and the cursor stays put."""
    arrange.put_row("z-stale", epoch=1, holder=LAPSED)
    workflows.put("m-indexed", indexed=True)
    counting = CountingStore(store)
    target = reclaim_target(registry("a", on=counting), on=counting)
    target.mark_disposing()

    assert target.list_candidates() == []
    assert counting.calls == []
    assert workflows.cursor() == (None, 0, 0)
