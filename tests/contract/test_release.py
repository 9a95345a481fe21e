"""release(wf, expected_epoch) and release_all() (docs/design.md §3)."""

from __future__ import annotations

import logging

from claims.protocol import ClaimResult, ClaimRow, Holder

from .stores import GRACE_MS, START_MS, TTL_MS, FailingStore

T0 = START_MS
EXPIRY = T0 + TTL_MS


def test_release_keeps_epoch(registry, arrange):
    """A release clears the holder but keeps the epoch, and drops the cache entry."""
    a = registry("a")
    a.acquire("wf")

    result = a.release("wf")

    assert result == ClaimResult("released", "wf", epoch=1)
    assert arrange.read("wf") == ClaimRow("wf", 1, None)
    assert a.current_epoch("wf") is None
    assert a.held_workflow_ids() == []
    assert arrange.events("wf") == [("acquired", None, 1, "a"), ("released", 1, 1, "a")]


def test_release_conditions_on_the_renewed_expiry(registry, arrange, clock):
    """After renewals the release compares the values the last renewal wrote, and succeeds."""
    a = registry("a")
    a.acquire("wf")
    clock.advance(5_000)
    a.renew("wf")

    assert a.release("wf").status == "released"
    assert arrange.read("wf") == ClaimRow("wf", 1, None)


def test_release_with_matching_expected_epoch_releases(registry, arrange):
    """A release naming the cached epoch goes ahead."""
    a = registry("a")
    a.acquire("wf")

    assert a.release("wf", expected_epoch=1) == ClaimResult("released", "wf", epoch=1)
    assert arrange.read("wf") == ClaimRow("wf", 1, None)


def test_release_with_wrong_expected_epoch_is_not_held_and_changes_nothing(registry, arrange):
    """A release naming another epoch than the cached one answers not-held and writes nothing."""
    a = registry("a")
    a.acquire("wf")

    result = a.release("wf", expected_epoch=2)

    assert result.status == "not-held"
    assert result.workflow_id == "wf"
    assert arrange.read("wf") == ClaimRow("wf", 1, Holder("a", 1, EXPIRY, T0))
    assert a.current_epoch("wf") == 1
    assert arrange.events("wf") == [("acquired", None, 1, "a")]
    assert a.renew("wf").status == "renewed"


def test_release_not_held_without_cache_entry(registry, arrange):
    """Releasing an id this engine does not cache answers not-held, even if another holds it."""
    registry("b").acquire("wf")

    assert registry("a").release("wf") == ClaimResult("not-held", "wf")
    assert registry("a").release("unknown") == ClaimResult("not-held", "unknown")
    assert arrange.read("wf").holder.engine_id == "b"


def test_release_after_foreign_takeover_is_lost_race_without_cooldown_or_callback(
    registry, arrange, clock
):
    """Releasing a claim someone took over is a quiet lost race: no cooldown, no callback."""
    lost_calls = []
    a = registry("a", on_claim_lost=lost_calls.append)
    a.acquire("wf")
    clock.set(EXPIRY + GRACE_MS + 1)
    registry("b").takeover("wf")

    result = a.release("wf")

    assert result.status == "lost-race"
    assert result.workflow_id == "wf"
    assert lost_calls == []
    assert a.metrics.snapshot()["attempts"]["deposed"] == 0
    assert not a.in_cooldown("wf", clock())
    assert a.held_workflow_ids() == []
    assert arrange.read("wf").holder.engine_id == "b"
    assert arrange.events("wf") == [("acquired", None, 1, "a"), ("takeover", 1, 2, "b")]
    assert a.takeover("wf").status == "not-expired"


def test_release_lost_race_logs_no_warning(registry, clock, caplog):
    """A release that lost to a takeover is routine at shutdown: nothing at WARNING or above."""
    a = registry("a")
    a.acquire("wf")
    clock.set(EXPIRY + GRACE_MS + 1)
    registry("b").takeover("wf")
    caplog.set_level(logging.DEBUG, logger="weftboard.claims")

    assert a.release("wf").status == "lost-race"
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_release_twice_is_not_held_the_second_time(registry, arrange):
    """The second release of the same claim answers not-held and writes no second event."""
    a = registry("a")
    a.acquire("wf")
    a.release("wf")

    assert a.release("wf") == ClaimResult("not-held", "wf")
    assert [e[0] for e in arrange.events("wf")] == ["acquired", "released"]


def test_release_all_releases_every_held_claim(registry, arrange):
    """release_all gives up every claim this engine holds and keeps every epoch."""
    a = registry("a")
    for wf in ("wf1", "wf2", "wf3"):
        a.acquire(wf)

    a.release_all()

    assert a.held_workflow_ids() == []
    for wf in ("wf1", "wf2", "wf3"):
        assert arrange.read(wf) == ClaimRow(wf, 1, None)


def test_release_all_swallows_failures(registry, arrange, store, clock):
    """A store error or a lost race on one claim does not keep the others held or raise."""
    a = registry("a", on=FailingStore(store, "cas_release", {"wf2"}))
    for wf in ("wf1", "wf2", "wf3", "wf4"):
        a.acquire(wf)
    clock.set(EXPIRY + GRACE_MS + 1)
    registry("b").takeover("wf3")

    a.release_all()

    assert arrange.read("wf1") == ClaimRow("wf1", 1, None)
    assert arrange.read("wf2").holder.engine_id == "a"
    assert arrange.read("wf3").holder.engine_id == "b"
    assert arrange.read("wf4") == ClaimRow("wf4", 1, None)
    assert "wf1" not in a.held_workflow_ids()
    assert "wf4" not in a.held_workflow_ids()
