"""renew(wf) and the anti-thrash cooldown after a lost renewal (docs/design.md §3)."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from claims.protocol import ClaimResult, ClaimRow, Holder, rotate_claim

from .stores import GRACE_MS, RENEW_INTERVAL_MS, START_MS, TTL_MS, CountingStore

T0 = START_MS
EXPIRY = T0 + TTL_MS


def test_renew_keeps_epoch_and_claimed_at(registry, arrange, clock):
    """A renewal moves only the expiry, to now + TTL; the epoch and claimed_at stay."""
    a = registry("a")
    a.acquire("wf")
    clock.advance(4_000)

    result = a.renew("wf")

    assert result == ClaimResult("renewed", "wf", epoch=1, expires_at_ms=T0 + 4_000 + TTL_MS)
    assert arrange.read("wf") == ClaimRow("wf", 1, Holder("a", 1, T0 + 4_000 + TTL_MS, T0))
    assert a.held_claim("wf") == Holder("a", 1, T0 + 4_000 + TTL_MS, T0)


def test_renew_twice_compares_the_values_it_last_wrote(registry, arrange, clock):
    """Consecutive renewals succeed because each CAS compares the expiry the previous one wrote."""
    a = registry("a")
    a.acquire("wf")
    for _ in range(3):
        clock.advance(RENEW_INTERVAL_MS)
        assert a.renew("wf").status == "renewed"
    assert arrange.read("wf").holder == Holder("a", 1, clock() + TTL_MS, T0)


def test_renew_after_long_stall_succeeds_if_nobody_took_over(registry, arrange, clock):
    """Time is not checked: a renewal ten minutes past expiry succeeds if the row is untouched."""
    a = registry("a")
    a.acquire("wf")
    clock.advance(600_000)

    result = a.renew("wf")

    assert result.status == "renewed"
    assert result.expires_at_ms == clock() + TTL_MS
    assert arrange.read("wf").holder == Holder("a", 1, clock() + TTL_MS, T0)


def test_renewals_write_no_event(registry, arrange, clock):
    """Renewals are not logged one by one: only the grant appears in the event log."""
    a = registry("a")
    a.acquire("wf")
    for _ in range(3):
        clock.advance(RENEW_INTERVAL_MS)
        a.renew("wf")

    assert arrange.events("wf") == [("acquired", None, 1, "a")]


@pytest.mark.parametrize("arranged", ["never held", "released", "held by another engine"])
def test_renew_not_held_without_cache_entry(registry, arrange, arranged):
    """Without a cache entry renew answers not-held and writes nothing."""
    a = registry("a")
    if arranged == "released":
        a.acquire("wf")
        a.release("wf")
    elif arranged == "held by another engine":
        registry("b").acquire("wf")
    before = arrange.read("wf")

    assert a.renew("wf") == ClaimResult("not-held", "wf")
    assert arrange.read("wf") == before


HOLDER_CHANGES = {
    "engine id": {"engine_id": "b"},
    "expires at": {"expires_at_ms": EXPIRY + 1},
    "claimed at": {"claimed_at_ms": T0 - 1},
    "holder epoch": {"epoch": 2},
}


@pytest.mark.parametrize("change", HOLDER_CHANGES.values(), ids=HOLDER_CHANGES.keys())
def test_renew_is_lost_when_any_holder_column_changed(registry, arrange, change):
    """The renewal CAS compares every holder column, so a change to any one loses it (the
    four a per-claim holder sets are changed here; the session epoch is not)."""
    a = registry("a")
    a.acquire("wf")
    arrange.put_row("wf", epoch=1, holder=replace(Holder("a", 1, EXPIRY, T0), **change))

    assert a.renew("wf").status == "lost"


def test_renew_is_lost_when_only_the_epoch_column_moved(registry, arrange):
    """The renewal CAS compares the epoch column too, not just the holder's copy of it."""
    a = registry("a")
    a.acquire("wf")
    arrange.put_row("wf", epoch=2, holder=Holder("a", 1, EXPIRY, T0))

    assert a.renew("wf").status == "lost"


def _depose(registry, clock):
    """Engine a acquires, stalls past its grace, and b takes over; returns (a, b, lost_calls)."""
    lost_calls = []
    a = registry("a", on_claim_lost=lost_calls.append)
    a.acquire("wf")
    clock.set(EXPIRY + GRACE_MS + 1)
    b = registry("b")
    assert b.takeover("wf").status == "acquired"
    return a, b, lost_calls


def test_lost_renewal_drops_claim_starts_cooldown_for_exactly_one_interval_and_reports_once(
    registry, arrange, clock
):
    """A lost renewal drops the entry, reports once, and backs takeover off for [L, L+interval)."""
    a, _b, lost_calls = _depose(registry, clock)
    lost_at = clock()

    result = a.renew("wf")

    assert result == ClaimResult("lost", "wf", epoch=1)
    assert lost_calls == ["wf"]
    assert a.metrics.snapshot()["attempts"]["deposed"] == 1
    assert a.current_epoch("wf") is None
    assert a.held_workflow_ids() == []
    assert a.renew("wf") == ClaimResult("not-held", "wf")
    assert lost_calls == ["wf"]
    assert a.metrics.snapshot()["attempts"]["deposed"] == 1

    assert a.takeover("wf") == ClaimResult("backoff-skipped", "wf")
    clock.set(lost_at + RENEW_INTERVAL_MS - 1)
    assert a.takeover("wf") == ClaimResult("backoff-skipped", "wf")
    clock.set(lost_at + RENEW_INTERVAL_MS)
    after = a.takeover("wf")
    assert after.status == "not-expired"
    assert after.held_by == "b"


def test_lost_renewal_logs_one_warning_on_the_claims_logger(registry, clock, caplog):
    """A lost renewal is reported once at WARNING on the weftboard.claims logger, naming the id."""
    a, _b, _ = _depose(registry, clock)
    caplog.set_level(logging.DEBUG, logger="weftboard.claims")

    a.renew("wf")
    a.renew("wf")

    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].name == "weftboard.claims"
    assert "wf" in warnings[0].getMessage()


def test_lost_renewal_writes_one_deposed_event(registry, arrange, clock):
    """A lost renewal is logged once as deposed from my epoch, with no epoch after."""
    a, _b, _ = _depose(registry, clock)
    a.renew("wf")
    a.renew("wf")

    assert arrange.events("wf") == [
        ("acquired", None, 1, "a"),
        ("takeover", 1, 2, "b"),
        ("deposed", 1, None, "a"),
    ]


def test_backoff_skipped_takeover_reads_nothing(registry, store, clock):
    """During the cooldown takeover answers backoff-skipped without a single store call."""
    counting = CountingStore(store)
    a = registry("a", on=counting)
    a.acquire("wf")
    clock.set(EXPIRY + GRACE_MS + 1)
    registry("b").takeover("wf")
    a.renew("wf")
    counting.calls.clear()

    assert a.takeover("wf").status == "backoff-skipped"
    assert counting.calls == []


def test_cooldown_is_per_workflow(registry, arrange, clock):
    """A lost renewal of one workflow does not back off takeovers of another."""
    a, _b, _ = _depose(registry, clock)
    registry("c").acquire("other")
    a.renew("wf")

    assert a.takeover("other").status == "not-expired"


def test_cooldown_cleared_by_successful_acquire(registry, arrange, clock):
    """A successful acquire of the id ends its cooldown at once."""
    a, b, _ = _depose(registry, clock)
    a.renew("wf")
    b.release("wf")

    assert a.acquire("wf").status == "acquired"
    assert not a.in_cooldown("wf", clock())
    assert a.takeover("wf").status == "not-expired"


def test_successful_takeover_after_the_window_leaves_no_cooldown(registry, arrange, clock):
    """A takeover that succeeds once the window has passed leaves no cooldown behind."""
    a, b, _ = _depose(registry, clock)
    a.renew("wf")
    clock.advance(RENEW_INTERVAL_MS + TTL_MS + GRACE_MS + 1)

    assert a.takeover("wf").status == "acquired"
    assert not a.in_cooldown("wf", clock())
    assert b.renew("wf").status == "lost"


def test_rotation_makes_the_next_renewal_lost(registry, arrange, clock, store):
    """A rotation by anyone else deposes the holder at its next renewal."""
    lost_calls = []
    a = registry("a", on_claim_lost=lost_calls.append)
    a.acquire("wf")
    rotate_claim(store, "wf", clock=clock)

    assert a.renew("wf").status == "lost"
    assert lost_calls == ["wf"]


def test_failing_on_claim_lost_callback_is_swallowed(registry, clock):
    """A callback that raises does not turn a lost renewal into an error."""

    def explode(workflow_id):
        raise RuntimeError("callback bug")

    a = registry("a", on_claim_lost=explode)
    a.acquire("wf")
    clock.set(EXPIRY + GRACE_MS + 1)
    registry("b").takeover("wf")

    assert a.renew("wf").status == "lost"
    assert a.held_workflow_ids() == []
