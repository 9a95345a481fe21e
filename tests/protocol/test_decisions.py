"""The pure grant judgements: acquire, takeover, and what reclaim does after a takeover
(docs/design.md §3). No store, no clock: a row, a time and the timing in, a decision out."""

from __future__ import annotations

import pytest

from claims.protocol import ClaimEventRecord, ClaimResult, ClaimRow, ClaimTiming, Holder
from claims.protocol.decisions import after_takeover, decide_acquire, decide_takeover
from claims.protocol.records import GrantPlan

TIMING = ClaimTiming(ttl_ms=30_000, renew_interval_ms=5_000)
NOW = 1_000_000
EXPIRES = NOW - TIMING.grace_ms  # at the edge of the grace: still alive
B_LIVE = Holder("b", 4, EXPIRES, NOW - 40_000)


def acquire(row: ClaimRow | None) -> ClaimResult | GrantPlan:
    return decide_acquire("wf", row, engine_id="a", now_ms=NOW, timing=TIMING)


def takeover(row: ClaimRow | None, now_ms: int = NOW) -> ClaimResult | GrantPlan:
    return decide_takeover("wf", row, engine_id="a", now_ms=now_ms, timing=TIMING)


def test_acquiring_an_id_with_no_row_plans_an_insert_at_epoch_1():
    assert acquire(None) == GrantPlan(
        "wf",
        0,
        None,
        Holder("a", 1, NOW + TIMING.ttl_ms, NOW),
        ClaimEventRecord("wf", "acquired", None, 1, "a", NOW),
    )


def test_acquiring_a_row_without_a_holder_plans_the_next_epoch_expecting_no_holder():
    assert acquire(ClaimRow("wf", 7, None)) == GrantPlan(
        "wf",
        7,
        None,
        Holder("a", 8, NOW + TIMING.ttl_ms, NOW),
        ClaimEventRecord("wf", "acquired", 7, 8, "a", NOW),
    )


@pytest.mark.parametrize(
    ("holder", "held_by"),
    [(B_LIVE, "b"), (Holder("b", 4, 0, 0), "b"), (Holder("", 4, NOW, NOW), None)],
    ids=["live", "long-expired", "invalid"],
)
def test_acquire_never_judges_expiry_any_holder_present_wins(holder, held_by):
    """Expired or garbage, a holder makes acquire lose; held_by names only a valid one."""
    assert acquire(ClaimRow("wf", 4, holder)) == ClaimResult("lost-race", "wf", held_by=held_by)


def test_takeover_of_no_row_or_no_holder_is_no_claim_with_the_epoch_read():
    assert takeover(None) == ClaimResult("no-claim", "wf", epoch=None)
    assert takeover(ClaimRow("wf", 3, None)) == ClaimResult("no-claim", "wf", epoch=3)


def test_takeover_of_a_valid_holder_inside_its_grace_is_not_expired():
    assert takeover(ClaimRow("wf", 4, B_LIVE)) == ClaimResult(
        "not-expired", "wf", epoch=4, held_by="b", expires_at_ms=EXPIRES
    )


def test_takeover_one_ms_past_the_grace_plans_the_next_epoch_expecting_the_holder_read():
    plan = takeover(ClaimRow("wf", 4, B_LIVE), now_ms=NOW + 1)

    assert plan == GrantPlan(
        "wf",
        4,
        B_LIVE,
        Holder("a", 5, NOW + 1 + TIMING.ttl_ms, NOW + 1),
        # The move names the engine it is taken from, whose cache may still hold it.
        ClaimEventRecord("wf", "takeover", 4, 5, "a", NOW + 1, holder_before="b"),
    )


def test_an_invalid_holder_is_taken_over_at_once_whatever_its_expiry():
    """A holder whose epoch differs from the row's is garbage: no grace applies."""
    garbage = Holder("b", 3, NOW + 60_000, NOW)

    plan = takeover(ClaimRow("wf", 4, garbage))

    assert isinstance(plan, GrantPlan)
    assert (plan.expected_epoch, plan.expected_holder, plan.holder.epoch) == (4, garbage, 5)


@pytest.mark.parametrize(
    ("result", "held_here", "step"),
    [
        (ClaimResult("acquired", "wf", epoch=5), False, "drive"),
        (ClaimResult("backoff-skipped", "wf"), False, "backoff-skipped"),
        (ClaimResult("not-expired", "wf", epoch=4, held_by="b"), False, "not-eligible"),
        (ClaimResult("not-expired", "wf", epoch=4, held_by="a"), False, "take-back"),
        (ClaimResult("not-expired", "wf", epoch=4, held_by="a"), True, "not-eligible"),
        (ClaimResult("lost-race", "wf"), False, "retry"),
        (ClaimResult("no-claim", "wf", epoch=3), False, "acquire"),
    ],
    ids=["granted", "cooldown", "live-other", "ghost", "mine-held", "lost-race", "no-claim"],
)
def test_what_reclaim_does_after_a_takeover(result, held_here, step):
    """A live row naming this engine is taken back only when the engine does not hold it."""
    assert after_takeover(result, engine_id="a", held_here=held_here) == step
