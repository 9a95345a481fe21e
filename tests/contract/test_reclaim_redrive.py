"""Driving a reclaimed workflow, and re-driving it in place after the drive raised
(docs/design.md §4)."""

from __future__ import annotations

import pytest

from claims.protocol import ClaimRow, Holder

from .stores import GRACE_MS, RENEW_INTERVAL_MS, START_MS, TTL_MS, CountingStore

T0 = START_MS
EXPIRY = T0 + TTL_MS
CAS_METHODS = ("cas_insert", "cas_grant", "cas_rotate", "cas_renew", "cas_release", "renew_many")


class Runtime:
    """Stands in for the engine's workflow runtime: records drives, raises while told to."""

    def __init__(self) -> None:
        self.driven: list[str] = []
        self.failing = True

    def __call__(self, workflow_id: str) -> None:
        self.driven.append(workflow_id)
        if self.failing:
            raise RuntimeError(f"runtime down for {workflow_id}")


def cas_calls(counting: CountingStore) -> list[str]:
    return [name for name in counting.calls if name in CAS_METHODS]


def failed_takeover(registry, arrange, workflows, reclaim_target, clock, *, on=None):
    """Engine a takes over an expired claim at epoch 3 and its drive raises.

    ``on=`` puts a wrapper store in front of both the registry and the target.
    """
    workflows.put("wf")
    arrange.put_row("wf", epoch=2, holder=Holder("b", 2, EXPIRY, T0))
    clock.set(EXPIRY + GRACE_MS + 1)
    runtime = Runtime()
    a = registry("a", on=on)
    target = reclaim_target(a, on=on, on_reclaimed=runtime)
    with pytest.raises(RuntimeError, match="runtime down for wf"):
        target.attempt("wf")
    return a, target, runtime


def assert_no_redrive_pending(target, workflows) -> None:
    """No re-drive is left, neither in the target's memory nor in the store."""
    assert target.pending_redrives == {}
    assert workflows.pending_redrives() == {}


def lose_to_b(registry, a, clock) -> None:
    """a stalls past the grace: b takes the claim over (epoch 4), and a's renewal is lost."""
    clock.advance(TTL_MS + GRACE_MS + 1)
    assert registry("b").takeover("wf").status == "acquired"
    assert a.renew("wf").status == "lost"


def lose_to_b_and_take_back(registry, a, clock) -> None:
    """As ``lose_to_b``; then b stalls in turn, and a takes the claim back directly (epoch 5)."""
    lose_to_b(registry, a, clock)
    clock.advance(TTL_MS + GRACE_MS + 1)
    assert a.takeover("wf").epoch == 5


def test_drive_that_raises_keeps_the_claim_records_the_redrive_and_propagates(
    registry, arrange, workflows, reclaim_target, clock
):
    """A raising drive keeps the claim, records {wf: epoch} in memory and store, and re-raises."""
    grant_at = EXPIRY + GRACE_MS + 1

    a, target, runtime = failed_takeover(registry, arrange, workflows, reclaim_target, clock)

    assert runtime.driven == ["wf"]
    assert a.current_epoch("wf") == 3
    assert arrange.read("wf") == ClaimRow("wf", 3, Holder("a", 3, grant_at + TTL_MS, grant_at))
    assert target.pending_redrives == {"wf": 3}
    assert workflows.pending_redrives() == {
        ("a", "wf"): (3, 1, "RuntimeError: runtime down for wf")
    }
    assert [kind for kind, *_ in arrange.events("wf")] == ["takeover"]


def test_pending_redrives_is_a_copy(registry, arrange, workflows, reclaim_target, clock):
    """pending_redrives returns a copy: changing it changes nothing in the target."""
    _a, target, _ = failed_takeover(registry, arrange, workflows, reclaim_target, clock)

    copy = target.pending_redrives
    copy.clear()

    assert target.pending_redrives == {"wf": 3}


def test_next_attempt_redrives_in_place_without_a_cas_and_clears_the_record(
    registry, store, arrange, workflows, reclaim_target, clock
):
    """The next pass re-drives the held claim with no new CAS; success drops both records."""
    counting = CountingStore(store)
    a, target, runtime = failed_takeover(
        registry, arrange, workflows, reclaim_target, clock, on=counting
    )
    counting.calls.clear()
    before = arrange.read("wf")
    runtime.failing = False

    assert target.attempt("wf") == "reclaimed"

    assert runtime.driven == ["wf", "wf"]
    assert cas_calls(counting) == []
    assert "read_claim" not in counting.calls
    assert arrange.read("wf") == before
    assert a.current_epoch("wf") == 3
    assert_no_redrive_pending(target, workflows)


def test_redrive_on_the_same_target_follows_a_failed_one_and_counts_attempts(
    registry, store, arrange, workflows, reclaim_target, clock
):
    """Re-drives stay at the claim's epoch; each failure bumps the persisted attempt count."""
    a, target, runtime = failed_takeover(registry, arrange, workflows, reclaim_target, clock)
    metrics_before = a.metrics.snapshot()

    assert target.list_candidates() == ["wf"]
    with pytest.raises(RuntimeError):
        target.attempt("wf")
    assert target.pending_redrives == {"wf": 3}
    assert workflows.pending_redrives()[("a", "wf")][:2] == (3, 2)

    runtime.failing = False
    assert target.attempt("wf") == "reclaimed"
    assert runtime.driven == ["wf", "wf", "wf"]
    assert arrange.read("wf").epoch == 3
    assert a.metrics.snapshot() == metrics_before
    assert_no_redrive_pending(target, workflows)
    assert target.list_candidates() == []


def test_held_claim_without_pending_redrive_is_driven_in_place(
    registry, store, arrange, workflows, reclaim_target
):
    """A claim this engine already holds is driven as it is, with no CAS and the same epoch."""
    workflows.put("wf")
    counting = CountingStore(store)
    a = registry("a", on=counting)
    a.acquire("wf")
    counting.calls.clear()
    driven: list[str] = []

    assert reclaim_target(a, on=counting, on_reclaimed=driven.append).attempt("wf") == "reclaimed"
    assert driven == ["wf"]
    assert cas_calls(counting) == []
    assert a.current_epoch("wf") == 1


@pytest.mark.parametrize("status", ["completed", "cancelled", "suspended", "failed"])
def test_held_redrive_of_a_workflow_no_longer_running_releases_it(
    registry, arrange, workflows, reclaim_target, clock, status
):
    """A pending re-drive whose workflow stopped running is released (epoch kept): not-eligible."""
    a, target, runtime = failed_takeover(registry, arrange, workflows, reclaim_target, clock)
    workflows.set_status("wf", status)

    assert target.attempt("wf") == "not-eligible"

    assert runtime.driven == ["wf"]
    assert arrange.read("wf") == ClaimRow("wf", 3, None)
    assert a.held_workflow_ids() == []
    assert arrange.events("wf")[-1] == ("released", 3, 3, "a")
    assert_no_redrive_pending(target, workflows)


def test_stale_redrive_after_losing_and_retaking_the_claim_is_dropped_and_taken_over(
    registry, arrange, workflows, reclaim_target, clock
):
    """A re-drive recorded at an epoch this engine no longer holds is dropped; takeover decides."""
    a, target, runtime = failed_takeover(registry, arrange, workflows, reclaim_target, clock)
    lose_to_b_and_take_back(registry, a, clock)
    assert target.pending_redrives == {"wf": 3}
    # ... then a stalls once more, so a takeover of its own lapsed claim is possible.
    clock.advance(TTL_MS + GRACE_MS + 1)
    now = clock()
    runtime.failing = False
    takeovers = a.metrics.snapshot()["attempts"]["takeover"]

    assert target.attempt("wf") == "reclaimed"

    assert a.metrics.snapshot()["attempts"]["takeover"] == takeovers + 1
    assert arrange.read("wf") == ClaimRow("wf", 6, Holder("a", 6, now + TTL_MS, now))
    assert arrange.events("wf")[-1] == ("takeover", 5, 6, "a")
    assert runtime.driven == ["wf", "wf"]
    assert_no_redrive_pending(target, workflows)


def test_stale_redrive_of_a_live_retaken_claim_goes_through_takeover_not_a_redrive(
    registry, store, arrange, workflows, reclaim_target, clock
):
    """The dropped stale re-drive is not driven in place: takeover of the live claim says no."""
    counting = CountingStore(store)
    a, target, runtime = failed_takeover(
        registry, arrange, workflows, reclaim_target, clock, on=counting
    )
    lose_to_b_and_take_back(registry, a, clock)
    before = arrange.read("wf")
    counting.calls.clear()
    runtime.failing = False

    assert target.attempt("wf") == "not-eligible"

    assert "read_claim" in counting.calls  # the takeover read
    assert cas_calls(counting) == []
    assert runtime.driven == ["wf"]
    assert arrange.read("wf") == before
    assert_no_redrive_pending(target, workflows)


def test_redrive_of_a_claim_lost_to_another_engine_is_dropped(
    registry, arrange, workflows, reclaim_target, clock
):
    """After losing the claim, the pending re-drive is dropped and the live new holder wins."""
    a, target, runtime = failed_takeover(registry, arrange, workflows, reclaim_target, clock)
    lose_to_b(registry, a, clock)
    clock.advance(RENEW_INTERVAL_MS)  # past the cooldown
    runtime.failing = False

    assert target.attempt("wf") == "not-eligible"

    assert runtime.driven == ["wf"]
    assert arrange.read("wf").holder.engine_id == "b"
    assert_no_redrive_pending(target, workflows)
