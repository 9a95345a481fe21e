"""takeover(wf): steal an expired or invalid claim, minting the next epoch (docs/design.md §3)."""

from __future__ import annotations

import pytest

from claims.protocol import ClaimResult, ClaimRow, Holder, rotate_claim

from .stores import GRACE_MS, START_MS, TTL_MS, InterposedStore
from .test_acquire import INVALID_HOLDERS

T0 = START_MS
EXPIRY = T0 + TTL_MS


def test_takeover_of_live_claim_is_not_expired_with_holder_and_expiry(registry, arrange, clock):
    """A live foreign claim answers not-expired with its epoch, holder and expiry, and stays."""
    registry("b").acquire("wf")
    clock.advance(TTL_MS)

    result = registry("a").takeover("wf")

    assert result == ClaimResult("not-expired", "wf", epoch=1, held_by="b", expires_at_ms=EXPIRY)
    assert arrange.read("wf") == ClaimRow("wf", 1, Holder("b", 1, EXPIRY, T0))


def test_takeover_at_exact_grace_boundary_is_not_expired(registry, arrange, clock):
    """At exactly expires_at + 2 x renew interval the claim is still alive."""
    registry("b").acquire("wf")
    clock.set(EXPIRY + GRACE_MS)

    result = registry("a").takeover("wf")

    assert result.status == "not-expired"
    assert result.held_by == "b"
    assert arrange.read("wf").epoch == 1


def test_takeover_one_ms_after_grace_mints_epoch_plus_one_from_epoch_column(
    registry, arrange, clock
):
    """One ms past the grace the claim is stolen at the epoch column + 1, held by me."""
    arrange.put_row("wf", epoch=41, holder=Holder("b", 41, EXPIRY, T0))
    clock.set(EXPIRY + GRACE_MS + 1)
    now = clock()
    a = registry("a")

    result = a.takeover("wf")

    assert result == ClaimResult("acquired", "wf", epoch=42, expires_at_ms=now + TTL_MS)
    assert arrange.read("wf") == ClaimRow("wf", 42, Holder("a", 42, now + TTL_MS, now))
    assert a.current_epoch("wf") == 42
    assert arrange.events("wf") == [("takeover", 41, 42, "a")]


def test_takeover_mints_from_epoch_column_not_from_garbage_holder_epoch(registry, arrange):
    """A holder whose epoch copy is garbage (7 on a row at 41) is stolen at epoch 42."""
    arrange.put_row("wf", epoch=41, holder=Holder("b", 7, EXPIRY, T0))

    result = registry("a").takeover("wf")

    assert result.status == "acquired"
    assert result.epoch == 42
    assert arrange.read("wf") == ClaimRow("wf", 42, Holder("a", 42, EXPIRY, T0))


@pytest.mark.parametrize("holder", INVALID_HOLDERS.values(), ids=INVALID_HOLDERS.keys())
def test_takeover_steals_invalid_holder_at_once(registry, arrange, holder):
    """An invalid holder is stolen without waiting for any expiry, at the next epoch."""
    arrange.put_row("wf", epoch=5, holder=holder)

    result = registry("a").takeover("wf")

    assert result == ClaimResult("acquired", "wf", epoch=6, expires_at_ms=EXPIRY)
    assert arrange.read("wf") == ClaimRow("wf", 6, Holder("a", 6, EXPIRY, T0))
    assert arrange.events("wf") == [("takeover", 5, 6, "a")]


@pytest.mark.parametrize("arranged", ["no row", "released row", "rotated row"])
def test_takeover_of_no_row_or_no_holder_is_no_claim(registry, arrange, clock, store, arranged):
    """With no row or no holder there is nothing to take over and nothing is written."""
    if arranged == "released row":
        b = registry("b")
        b.acquire("wf")
        b.release("wf")
    elif arranged == "rotated row":
        rotate_claim(store, "wf", clock=clock)
    before_row, before_events = arrange.read("wf"), arrange.events("wf")
    a = registry("a")

    result = a.takeover("wf")

    assert result.status == "no-claim"
    assert result.workflow_id == "wf"
    assert result.held_by is None
    assert arrange.read("wf") == before_row
    assert arrange.events("wf") == before_events
    assert a.held_workflow_ids() == []


def test_takeover_lost_race_reports_held_by_from_reread(registry, arrange, clock, store):
    """When another engine takes over between my read and my CAS, I lose naming it."""
    registry("b").acquire("wf")
    clock.set(EXPIRY + GRACE_MS + 1)
    c = registry("c")
    a = registry("a", on=InterposedStore(store, "cas_grant", lambda: c.takeover("wf")))

    result = a.takeover("wf")

    assert result == ClaimResult("lost-race", "wf", held_by="c")
    assert a.held_workflow_ids() == []
    assert arrange.read("wf").epoch == 2
    assert arrange.read("wf").holder.engine_id == "c"
    assert arrange.events("wf") == [("acquired", None, 1, "b"), ("takeover", 1, 2, "c")]


def test_takeover_loses_to_a_renewal_between_read_and_cas(registry, arrange, clock, store):
    """The CAS compares every holder column, so a renewal after my read makes me lose."""
    b = registry("b")
    b.acquire("wf")
    clock.set(EXPIRY + GRACE_MS + 1)
    a = registry("a", on=InterposedStore(store, "cas_grant", lambda: b.renew("wf")))

    result = a.takeover("wf")

    assert result == ClaimResult("lost-race", "wf", held_by="b")
    assert arrange.read("wf") == ClaimRow("wf", 1, Holder("b", 1, clock() + TTL_MS, T0))
    assert b.current_epoch("wf") == 1


def test_takeover_losing_to_a_rotation_reports_no_holder(registry, arrange, clock, store):
    """When a rotation clears the holder before my CAS, the lost race names nobody."""
    registry("b").acquire("wf")
    clock.set(EXPIRY + GRACE_MS + 1)
    a = registry(
        "a", on=InterposedStore(store, "cas_grant", lambda: rotate_claim(store, "wf", clock=clock))
    )

    result = a.takeover("wf")

    assert result == ClaimResult("lost-race", "wf", held_by=None)
    assert arrange.read("wf") == ClaimRow("wf", 2, None)


def test_takeover_of_my_own_expired_claim_moves_me_to_the_next_epoch(registry, arrange, clock):
    """An engine may take over its own expired claim; it then caches the new epoch."""
    a = registry("a")
    a.acquire("wf")
    clock.set(EXPIRY + GRACE_MS + 1)
    now = clock()

    result = a.takeover("wf")

    assert result.status == "acquired"
    assert result.epoch == 2
    assert a.held_claim("wf") == Holder("a", 2, now + TTL_MS, now)
    assert a.renew("wf").status == "renewed"
