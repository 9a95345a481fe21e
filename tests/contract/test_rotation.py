"""rotate_claim: epoch rotations by someone other than the holder (docs/design.md §3, §7)."""

from __future__ import annotations

import pytest

from claims.protocol import ClaimRow, EngineDeposedError, Holder, StaleEpochError, rotate_claim

from .stores import START_MS, TTL_MS, InterposedStore

T0 = START_MS
EXPIRY = T0 + TTL_MS


def test_rotation_by_non_owner_deposes_owner(registry, arrange, clock, store):
    """After a rotation the owner's next renewal is lost and its fenced writes are refused."""
    a = registry("a")
    a.acquire("wf")

    new_epoch = rotate_claim(store, "wf", clock=clock)

    assert new_epoch == 2
    assert arrange.read("wf") == ClaimRow("wf", 2, None)
    with pytest.raises(EngineDeposedError) as raised:
        a.fenced_write("wf", lambda: "written")
    assert raised.value.workflow_id == "wf"
    assert a.renew("wf").status == "lost"
    with pytest.raises(EngineDeposedError):
        a.fenced_write("wf", lambda: "written")


def test_rotation_of_unknown_id_creates_epoch_1_without_holder(arrange, clock, store):
    """Rotating an id with no row inserts it at epoch 1 with no holder."""
    assert rotate_claim(store, "wf", clock=clock) == 1
    assert arrange.read("wf") == ClaimRow("wf", 1, None)
    assert arrange.events("wf") == [("rotated", None, 1, None)]


def test_rotation_wins_over_a_live_holder_and_logs_one_event(registry, arrange, clock, store):
    """A rotation is conditioned on the epoch alone, so it applies over a live holder."""
    registry("a").acquire("wf")

    assert rotate_claim(store, "wf", clock=clock, expected_epoch=1) == 2
    assert arrange.read("wf") == ClaimRow("wf", 2, None)
    assert arrange.events("wf") == [("acquired", None, 1, "a"), ("rotated", 1, 2, None)]


def test_rotation_with_stale_expected_epoch_raises_and_changes_nothing(
    registry, arrange, clock, store
):
    """A rotation naming an epoch the claim has left raises StaleEpochError and writes nothing."""
    a = registry("a")
    a.acquire("wf")
    a.release("wf")
    registry("b").acquire("wf")
    before_row, before_events = arrange.read("wf"), arrange.events("wf")

    with pytest.raises(StaleEpochError) as raised:
        rotate_claim(store, "wf", clock=clock, expected_epoch=1)

    assert (raised.value.workflow_id, raised.value.expected_epoch) == ("wf", 1)
    assert raised.value.current_epoch == 2
    assert arrange.read("wf") == before_row
    assert arrange.events("wf") == before_events


def test_rotation_with_expected_epoch_of_unknown_id_raises(arrange, clock, store):
    """Naming an epoch for an id that has no row is stale: nothing is inserted."""
    with pytest.raises(StaleEpochError) as raised:
        rotate_claim(store, "wf", clock=clock, expected_epoch=1)

    assert raised.value.current_epoch is None
    assert arrange.read("wf") is None
    assert arrange.events("wf") == []


def test_rotation_losing_a_race_raises_stale_epoch(registry, arrange, clock, store):
    """If the epoch moves between the rotation's read and its CAS, it raises, writing nothing."""
    registry("a").acquire("wf")
    racing = InterposedStore(store, "cas_rotate", lambda: rotate_claim(store, "wf", clock=clock))

    with pytest.raises(StaleEpochError) as raised:
        rotate_claim(racing, "wf", clock=clock)

    assert (raised.value.expected_epoch, raised.value.current_epoch) == (1, 2)
    assert arrange.read("wf") == ClaimRow("wf", 2, None)
    assert [e[0] for e in arrange.events("wf")] == ["acquired", "rotated"]


def test_rotation_can_grant_the_new_epoch_to_an_engine(arrange, clock, store):
    """With a new holder the rotation grants it the new epoch for ttl_ms from now."""
    rotate_claim(store, "wf", clock=clock)

    epoch = rotate_claim(
        store,
        "wf",
        clock=clock,
        kind="forced_takeover",
        new_holder_engine_id="c",
        ttl_ms=TTL_MS,
        actor="ops",
        reason="drain host",
    )

    assert epoch == 2
    assert arrange.read("wf") == ClaimRow("wf", 2, Holder("c", 2, EXPIRY, T0))
    assert arrange.events("wf")[-1] == ("forced_takeover", 1, 2, "c")


def test_an_expected_epoch_of_zero_means_the_caller_saw_no_claim_row(store, clock):
    """One convention for every compare of an epoch a caller saw: 0 is "no claim row yet"."""
    assert rotate_claim(store, "wf", clock=clock, expected_epoch=0) == 1

    with pytest.raises(StaleEpochError) as moved:
        rotate_claim(store, "wf", clock=clock, expected_epoch=0)

    assert (moved.value.expected_epoch, moved.value.current_epoch) == (0, 1)
