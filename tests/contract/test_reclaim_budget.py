"""A reclaim pass takes its candidates a chunk at a time under a time budget
(docs/design.md §4, "A mass failure is split"): the shared window stops where the budget
runs out and waits for the next pass; what only this engine can settle, and the scan's
page, are attempted whatever it costs."""

from __future__ import annotations

from contextlib import contextmanager

import pytest

from claims.protocol import Holder
from claims.protocol.passes import run_reclaim_pass

from .stores import START_MS, TTL_MS, CountingStore, InterposedStore, strand

T0 = START_MS
DRIVE_MS = 4  # what each drive costs on the fake clock


def slow_drive(clock, driven: list[str]):
    """A drive that notes its workflow and takes DRIVE_MS of the fake clock."""

    def drive(workflow_id: str) -> None:
        driven.append(workflow_id)
        clock.advance(DRIVE_MS)

    return drive


def test_the_shared_window_stops_at_the_budget_and_the_next_pass_goes_on(
    registry, arrange, workflows, reclaim_target, clock
):
    """Ten stranded, chunks of three, a budget of 10 ms, 4 ms a drive: one chunk per pass
    (12 ms spent after it), the other seven deferred, not dropped; four passes take all."""
    stranded = strand(arrange, workflows, 10)
    driven: list[str] = []
    a = registry("a")
    target = reclaim_target(
        a, on_reclaimed=slow_drive(clock, driven), chunk_size=3, pass_budget_ms=10
    )

    first = run_reclaim_pass(target)

    assert [status for _, status in first.outcomes] == ["reclaimed"] * 3
    assert (first.reclaimed_count, first.deferred_count) == (3, 7)
    assert sorted(a.held_workflow_ids()) == sorted(wf for wf, _ in first.outcomes)
    deferred_counts = [run_reclaim_pass(target).deferred_count for _ in range(3)]
    assert deferred_counts == [4, 1, 0]
    assert sorted(driven) == stranded
    assert sorted(a.held_workflow_ids()) == stranded


def test_within_the_budget_a_pass_takes_every_chunk(
    registry, arrange, workflows, reclaim_target, clock
):
    stranded = strand(arrange, workflows, 10)
    driven: list[str] = []
    target = reclaim_target(
        registry("a"), on_reclaimed=slow_drive(clock, driven), chunk_size=3, pass_budget_ms=41
    )

    result = run_reclaim_pass(target)

    assert (result.reclaimed_count, result.deferred_count) == (10, 0)
    assert sorted(driven) == stranded


def test_the_scan_page_is_attempted_whatever_the_budget_and_no_window_chunk_follows(
    registry, arrange, workflows, reclaim_target, clock
):
    """Five workflows only the scan found, a spent budget after the first drive: all five
    are taken (the cursor has moved on, no other engine will read them this round), none
    mixed with the window in the page's last chunk; of the window's three, its one
    unconditional chunk of two is taken and the third waits."""
    stranded = strand(arrange, workflows, 3)
    scanned = [f"u-{i}" for i in range(5)]
    workflows.put_many(scanned, indexed=False)
    driven: list[str] = []
    target = reclaim_target(
        registry("a"), on_reclaimed=slow_drive(clock, driven), chunk_size=2, pass_budget_ms=1
    )

    result = run_reclaim_pass(target)

    assert target.last_discovery.must_attempt == 5
    assert [wf for wf, _ in result.outcomes] == [*scanned, *stranded[:2]]
    assert {status for _, status in result.outcomes} == {"reclaimed"}
    assert (result.deferred_count, target.carried) == (1, 1)
    assert sorted(driven) == sorted([*scanned, *stranded[:2]])


def test_a_budget_of_zero_still_settles_what_only_this_engine_can(
    registry, arrange, workflows, reclaim_target, clock
):
    """A row naming this engine that it does not hold is adopted even when no time is left;
    of the window, only the one chunk every pass takes."""
    stranded = strand(arrange, workflows, 4)
    workflows.put("mine")
    arrange.put_row("mine", epoch=7, holder=Holder("a", 7, T0 + TTL_MS, T0))
    a = registry("a")
    target = reclaim_target(a, chunk_size=1, pass_budget_ms=0)

    result = run_reclaim_pass(target)

    assert result.outcomes == [("mine", "reclaimed"), (stranded[0], "reclaimed")]
    assert result.deferred_count == 3
    assert a.current_epoch("mine") == 7


def test_a_chunk_size_below_one_is_refused(registry, reclaim_target):
    with pytest.raises(ValueError, match="chunk_size"):
        reclaim_target(registry("a"), chunk_size=0)


def test_the_attempts_run_inside_the_callers_context_and_only_when_there_are_some(
    registry, arrange, workflows, reclaim_target
):
    """The engine holds its new drives back around the takeovers, not around an idle pass."""
    entered: list[str] = []
    inside: list[bool] = []

    @contextmanager
    def attempting():
        entered.append("in")
        yield
        entered.append("out")

    target = reclaim_target(
        registry("a"), on_reclaimed=lambda _: inside.append(entered[-1:] == ["in"])
    )
    run_reclaim_pass(target, attempting=attempting)
    assert entered == []

    strand(arrange, workflows, 2)
    run_reclaim_pass(target, attempting=attempting)
    assert entered == ["in", "out"]
    assert inside == [True, True]


def test_a_catch_up_pass_attempts_what_the_last_pass_left_without_a_discovery(
    registry, arrange, workflows, reclaim_target, clock, store
):
    """Ten stranded, one chunk of three per budget: the pass carries seven; a catch-up
    pass reads no source (no stale-holder read, no scan) and takes the next three; a full
    pass discovers again and drops what was carried."""
    stranded = strand(arrange, workflows, 10)
    counted = CountingStore(store)
    driven: list[str] = []
    a = registry("a", on=counted)
    target = reclaim_target(
        a, on=counted, on_reclaimed=slow_drive(clock, driven), chunk_size=3, pass_budget_ms=10
    )

    run_reclaim_pass(target)
    assert target.carried == 7
    counted.calls.clear()

    catch_up = run_reclaim_pass(target, catch_up=True)

    assert [wf for wf, _ in catch_up.outcomes] == stranded[3:6]
    assert (catch_up.reclaimed_count, catch_up.deferred_count, target.carried) == (3, 4, 4)
    assert "find_stale_holders" not in counted.calls
    assert "scan_unheld_running" not in counted.calls

    full = run_reclaim_pass(target)

    assert "find_stale_holders" in counted.calls
    assert [wf for wf, _ in full.outcomes] == stranded[6:9]
    assert target.carried == 1


def test_a_catch_up_pass_skips_what_this_engine_took_meanwhile(
    registry, arrange, workflows, reclaim_target, clock
):
    stranded = strand(arrange, workflows, 4)
    a = registry("a")
    target = reclaim_target(a, on_reclaimed=slow_drive(clock, []), chunk_size=1, pass_budget_ms=1)
    run_reclaim_pass(target)  # takes the first, carries three
    assert target.carried == 3
    assert a.takeover(stranded[1]).status == "acquired"

    catch_up = run_reclaim_pass(target, catch_up=True)

    assert [wf for wf, _ in catch_up.outcomes] == [stranded[2]]
    assert target.carried == 1


def test_with_nothing_carried_a_catch_up_pass_does_nothing(registry, reclaim_target):
    target = reclaim_target(registry("a"))

    result = run_reclaim_pass(target, catch_up=True)

    assert (result.status, result.outcomes, result.deferred_count) == ("completed", [], 0)


def test_the_budget_counts_the_discovery_too_but_one_chunk_is_always_taken(
    registry, arrange, workflows, reclaim_target, clock, store
):
    """A discovery that took the whole budget: the pass still takes the first chunk of the
    window (a discovery slower than the budget must not leave every pass taking nothing),
    and leaves the rest for a catch-up pass."""
    stranded = strand(arrange, workflows, 3)
    slow = InterposedStore(store, "find_stale_holders", lambda: clock.advance(20))
    a = registry("a", on=slow)
    target = reclaim_target(a, on=slow, chunk_size=2, pass_budget_ms=10)

    result = run_reclaim_pass(target)

    assert [wf for wf, _ in result.outcomes] == stranded[:2]
    assert (result.deferred_count, target.carried) == (1, 1)
    assert result.discovery_ms == 20
