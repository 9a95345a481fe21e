"""adopt(wf, epoch): cache a claim an operator granted to this engine (docs/design.md §3, §7)."""

from __future__ import annotations

import pytest

from claims.protocol import Holder, rotate_claim

from .stores import START_MS, TTL_MS

T0 = START_MS


def test_adopt_caches_an_operator_grant(registry, arrange, clock, store):
    """An engine adopts the epoch an operator granted it, then renews and writes under it."""
    registry("b").acquire("wf")
    epoch = rotate_claim(
        store, "wf", clock=clock, kind="forced_takeover", new_holder_engine_id="a", ttl_ms=TTL_MS
    )
    a = registry("a")

    result = a.adopt("wf", epoch)

    assert result.status == "adopted"
    assert result.epoch == 2
    assert result.workflow_id == "wf"
    assert a.current_epoch("wf") == 2
    assert a.held_claim("wf") == Holder("a", 2, T0 + TTL_MS, T0)
    assert arrange.events("wf")[-1] == ("adopted", 2, 2, "a")
    assert a.fenced_write("wf", lambda: "ok") == "ok"
    clock.advance(1_000)
    assert a.renew("wf").status == "renewed"


ADOPT_REFUSALS = ["other engine", "older epoch", "newer epoch", "no row", "no holder"]


@pytest.mark.parametrize("case", ADOPT_REFUSALS)
def test_adopt_refuses_other_engine_or_epoch(registry, arrange, clock, store, case):
    """Adopt answers not-held, caches nothing and logs nothing unless the row is mine at epoch."""
    epoch = 1
    if case == "other engine":
        epoch = rotate_claim(store, "wf", clock=clock, new_holder_engine_id="b", ttl_ms=TTL_MS)
    elif case in ("older epoch", "newer epoch"):
        rotate_claim(store, "wf", clock=clock)
        granted = rotate_claim(store, "wf", clock=clock, new_holder_engine_id="a", ttl_ms=TTL_MS)
        epoch = granted - 1 if case == "older epoch" else granted + 1
    elif case == "no holder":
        epoch = rotate_claim(store, "wf", clock=clock)
    before_events = arrange.events("wf")
    a = registry("a")

    result = a.adopt("wf", epoch)

    assert result.status == "not-held"
    assert a.current_epoch("wf") is None
    assert a.held_workflow_ids() == []
    assert arrange.events("wf") == before_events


def test_adopt_refuses_an_invalid_holder_naming_me(registry, arrange):
    """A garbage holder row that names me is not adoptable."""
    arrange.put_row("wf", epoch=3, holder=Holder("a", 2, T0 + TTL_MS, T0))

    a = registry("a")

    assert a.adopt("wf", 3).status == "not-held"
    assert a.adopt("wf", 2).status == "not-held"
    assert a.held_workflow_ids() == []
