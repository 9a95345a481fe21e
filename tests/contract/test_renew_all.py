"""Set-based renewal: store.renew_many and registry.renew_all keep renew's rules
(docs/design.md §3)."""

from __future__ import annotations

from claims.protocol import ClaimResult, ClaimRow, Holder, rotate_claim

from .stores import START_MS, TTL_MS, CountingStore, InterposedStore

T0 = START_MS
EXPIRY = T0 + TTL_MS


def test_renew_many_renews_exactly_the_rows_still_matching(arrange, store):
    """Only rows whose epoch and all five holder columns equal the given holder get the new
    expiry (the session epoch, null here, is the next test's)."""
    mine = Holder("a", 1, EXPIRY, T0)
    arrange.put_row("same", epoch=1, holder=mine)
    arrange.put_row("claimed-at moved", epoch=1, holder=Holder("a", 1, EXPIRY, T0 + 1))
    arrange.put_row("expiry moved", epoch=1, holder=Holder("a", 1, EXPIRY + 1, T0))
    arrange.put_row("other engine", epoch=1, holder=Holder("b", 1, EXPIRY, T0))
    arrange.put_row("epoch moved", epoch=2, holder=mine)
    arrange.put_row("no holder", epoch=1, holder=None)
    ids = ["same", "claimed-at moved", "expiry moved", "other engine", "epoch moved", "no holder"]
    before = {wf: arrange.read(wf) for wf in [*ids, "no row"]}

    renewed = store.renew_many([(wf, mine) for wf in [*ids, "no row"]], expires_at_ms=EXPIRY + 500)

    assert renewed == {"same"}
    assert arrange.read("same") == ClaimRow("same", 1, Holder("a", 1, EXPIRY + 500, T0))
    for wf in [*ids[1:], "no row"]:
        assert arrange.read(wf) == before[wf]
    assert arrange.events("same") == []


def test_renew_many_of_nothing_renews_nothing(store):
    """An empty batch is an empty set."""
    assert store.renew_many([], expires_at_ms=EXPIRY) == set()


def test_renew_all_reports_every_claim_in_grant_order(registry, arrange, clock, store):
    """renew_all renews what is still mine and treats a lost claim exactly like renew does."""
    lost_calls = []
    a = registry("a", on_claim_lost=lost_calls.append)
    for wf in ("wf3", "wf1", "wf2"):
        a.acquire(wf)
    rotate_claim(store, "wf1", clock=clock)
    clock.advance(1_000)
    renewed_expiry = clock() + TTL_MS

    results = a.renew_all()

    assert results == [
        ("wf3", ClaimResult("renewed", "wf3", epoch=1, expires_at_ms=renewed_expiry)),
        ("wf1", ClaimResult("lost", "wf1", epoch=1)),
        ("wf2", ClaimResult("renewed", "wf2", epoch=1, expires_at_ms=renewed_expiry)),
    ]
    assert a.held_workflow_ids() == ["wf3", "wf2"]
    assert lost_calls == ["wf1"]
    assert a.in_cooldown("wf1", clock())
    assert a.metrics.snapshot()["attempts"]["deposed"] == 1
    assert arrange.events("wf1")[-1] == ("deposed", 1, None, "a")
    assert arrange.read("wf3").holder == Holder("a", 1, renewed_expiry, T0)
    assert a.renew("wf2").status == "renewed"


def test_renew_all_splits_into_chunks(registry, store, clock):
    """With chunk_size=2, five claims take three set-based statements and all renew."""
    counting = CountingStore(store)
    a = registry("a", on=counting)
    for n in range(5):
        a.acquire(f"wf{n}")
    counting.calls.clear()
    clock.advance(1_000)

    results = a.renew_all(chunk_size=2)

    assert [status.status for _, status in results] == ["renewed"] * 5
    assert counting.calls.count("renew_many") == 3


def test_renew_all_with_nothing_held_is_empty(registry):
    """An engine holding nothing gets an empty list."""
    assert registry("a").renew_all() == []


def test_renew_all_store_error_keeps_the_claims_cached(registry, arrange, store, clock):
    """A failing batch marks its claims None and keeps them cached, with no loss reported."""
    lost_calls = []

    def database_down():
        raise ConnectionError("database went away")

    a = registry(
        "a",
        on=InterposedStore(store, "renew_many", database_down),
        on_claim_lost=lost_calls.append,
    )
    a.acquire("wf1")
    a.acquire("wf2")

    assert a.renew_all() == [("wf1", None), ("wf2", None)]
    assert a.held_workflow_ids() == ["wf1", "wf2"]
    assert lost_calls == []
    assert not a.in_cooldown("wf1", clock())
    assert a.renew_all()[0][1].status == "renewed"


def test_renew_many_compares_the_session_epoch_too(arrange, store):
    """Every compare-and-swap compares all five holder columns: a row that differs from
    the given holder only in its session epoch is not renewed."""
    mine = Holder("a", 1, EXPIRY, T0)
    arrange.put_row("same", epoch=1, holder=mine)
    arrange.put_row("names a session", epoch=1, holder=Holder("a", 1, EXPIRY, T0, 7))
    before = arrange.read("names a session")

    renewed = store.renew_many(
        [("same", mine), ("names a session", mine)], expires_at_ms=EXPIRY + 500
    )

    assert renewed == {"same"}
    assert arrange.read("names a session") == before
