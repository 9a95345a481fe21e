"""acquire(wf): claim a workflow nobody holds; never judges expiry (docs/design.md §3)."""

from __future__ import annotations

import pytest

from claims.protocol import ClaimResult, ClaimRow, Holder, rotate_claim

from .stores import GRACE_MS, START_MS, TTL_MS, InterposedStore

T0 = START_MS


def test_acquire_new_id_mints_epoch_1(registry, arrange):
    """Acquiring an id with no row inserts it at epoch 1 held by me until now + TTL."""
    a = registry("a")

    result = a.acquire("wf")

    assert result == ClaimResult("acquired", "wf", epoch=1, expires_at_ms=T0 + TTL_MS)
    assert arrange.read("wf") == ClaimRow("wf", 1, Holder("a", 1, T0 + TTL_MS, T0))
    assert a.current_epoch("wf") == 1
    assert a.held_workflow_ids() == ["wf"]
    assert a.held_claim("wf") == Holder("a", 1, T0 + TTL_MS, T0)


def test_acquire_after_release_mints_next_epoch(registry, arrange, clock):
    """Acquiring a released id moves the kept epoch up by exactly one."""
    a, b = registry("a"), registry("b")
    a.acquire("wf")
    a.release("wf")
    clock.advance(7)

    result = b.acquire("wf")

    assert result == ClaimResult("acquired", "wf", epoch=2, expires_at_ms=T0 + 7 + TTL_MS)
    assert arrange.read("wf") == ClaimRow("wf", 2, Holder("b", 2, T0 + 7 + TTL_MS, T0 + 7))


def test_acquire_of_ownerless_row_continues_from_its_epoch(registry, arrange):
    """Acquiring an ownerless row at epoch 41 mints epoch 42."""
    arrange.put_row("wf", epoch=41, holder=None)

    result = registry("a").acquire("wf")

    assert result.status == "acquired"
    assert result.epoch == 42
    assert arrange.read("wf") == ClaimRow("wf", 42, Holder("a", 42, T0 + TTL_MS, T0))


def test_acquire_after_rotation_without_holder_mints_next_epoch(registry, arrange, clock, store):
    """A rotation leaves the row ownerless at the next epoch, and acquire continues from it."""
    rotate_claim(store, "wf", clock=clock)

    result = registry("a").acquire("wf")

    assert result.status == "acquired"
    assert result.epoch == 2


def test_acquire_never_looks_at_expiry(registry, arrange, clock):
    """A foreign holder long past its grace still makes acquire a lost race naming it."""
    registry("b").acquire("wf")
    clock.advance(TTL_MS + GRACE_MS + 3_600_000)

    result = registry("a").acquire("wf")

    assert result == ClaimResult("lost-race", "wf", held_by="b")
    assert arrange.read("wf") == ClaimRow("wf", 1, Holder("b", 1, T0 + TTL_MS, T0))


def test_acquire_loses_to_my_own_holder(registry, arrange):
    """Acquiring an id I already hold is a lost race naming me and leaves my claim as it was."""
    a = registry("a")
    a.acquire("wf")

    result = a.acquire("wf")

    assert result == ClaimResult("lost-race", "wf", held_by="a")
    assert a.current_epoch("wf") == 1
    assert arrange.read("wf") == ClaimRow("wf", 1, Holder("a", 1, T0 + TTL_MS, T0))
    assert arrange.events("wf") == [("acquired", None, 1, "a")]


INVALID_HOLDERS = {
    "empty engine id": Holder("", 5, T0 + TTL_MS, T0),
    "holder epoch differs": Holder("b", 4, T0 + TTL_MS, T0),
    "negative expiry": Holder("b", 5, -1, T0),
    "negative claimed at": Holder("b", 5, T0 + TTL_MS, -1),
    "expiry at 2**53": Holder("b", 5, 2**53, T0),
    "claimed at 2**53": Holder("b", 5, T0 + TTL_MS, 2**53),
    "null engine id": Holder(None, 5, T0 + TTL_MS, T0),
    "null holder epoch": Holder("b", None, T0 + TTL_MS, T0),
    "null expiry": Holder("b", 5, None, T0),
    "null claimed at": Holder("b", 5, T0 + TTL_MS, None),
}


@pytest.mark.parametrize("holder", INVALID_HOLDERS.values(), ids=INVALID_HOLDERS.keys())
def test_acquire_with_invalid_holder_is_lost_race_with_no_held_by(registry, arrange, holder):
    """A garbage holder blocks acquire, which reports a lost race naming nobody."""
    arrange.put_row("wf", epoch=5, holder=holder)

    result = registry("a").acquire("wf")

    assert result == ClaimResult("lost-race", "wf", held_by=None)
    assert arrange.read("wf") == ClaimRow("wf", 5, holder)
    assert arrange.events("wf") == []


def test_acquire_losing_the_insert_race_reports_the_winner(registry, arrange, store):
    """When another engine inserts the row between my read and my insert, I lose naming it."""
    b = registry("b")
    a = registry("a", on=InterposedStore(store, "cas_insert", lambda: b.acquire("wf")))

    result = a.acquire("wf")

    assert result == ClaimResult("lost-race", "wf", held_by="b")
    assert a.held_workflow_ids() == []
    assert arrange.read("wf") == ClaimRow("wf", 1, Holder("b", 1, T0 + TTL_MS, T0))
    assert arrange.events("wf") == [("acquired", None, 1, "b")]


def test_acquire_losing_the_grant_race_reports_the_winner(registry, arrange, store):
    """When another engine grants itself an ownerless row before my CAS, I lose naming it."""
    arrange.put_row("wf", epoch=3, holder=None)
    b = registry("b")
    a = registry("a", on=InterposedStore(store, "cas_grant", lambda: b.acquire("wf")))

    result = a.acquire("wf")

    assert result == ClaimResult("lost-race", "wf", held_by="b")
    assert a.current_epoch("wf") is None
    assert arrange.read("wf") == ClaimRow("wf", 4, Holder("b", 4, T0 + TTL_MS, T0))


def test_acquire_losing_to_a_rotation_reports_no_holder(registry, arrange, store, clock):
    """When a rotation moves the epoch of an ownerless row before my CAS, I lose naming nobody."""
    arrange.put_row("wf", epoch=3, holder=None)
    a = registry(
        "a", on=InterposedStore(store, "cas_grant", lambda: rotate_claim(store, "wf", clock=clock))
    )

    result = a.acquire("wf")

    assert result == ClaimResult("lost-race", "wf", held_by=None)
    assert arrange.read("wf") == ClaimRow("wf", 4, None)
