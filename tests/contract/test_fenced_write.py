"""Fenced writes: workflow-scoped writes run only at the epoch this engine holds
(docs/design.md §3)."""

from __future__ import annotations

import pytest

from claims.protocol import EngineDeposedError, rotate_claim

from .stores import GRACE_MS, START_MS, TTL_MS, CountingStore


def test_fenced_write_runs_fn_at_current_epoch(registry):
    """While the cached epoch is current, fenced_write runs fn once and returns its value."""
    a = registry("a")
    a.acquire("wf")
    calls = []

    assert a.fenced_write("wf", lambda: calls.append("ran") or "result") == "result"
    assert calls == ["ran"]


def test_fenced_write_with_nothing_cached_raises_without_touching_store(registry, store):
    """With no cached epoch fenced_write raises EngineDeposedError before any store call."""
    counting = CountingStore(store)
    a = registry("a", on=counting)
    calls = []

    with pytest.raises(EngineDeposedError) as raised:
        a.fenced_write("wf", lambda: calls.append("ran"))

    assert raised.value.workflow_id == "wf"
    assert calls == []
    assert counting.calls == []


def test_fenced_write_after_takeover_raises_and_does_not_run_fn(registry, clock):
    """Once another engine took over, the stale owner's fenced write is refused, fn unrun."""
    a = registry("a")
    a.acquire("wf")
    clock.set(START_MS + TTL_MS + GRACE_MS + 1)
    registry("b").takeover("wf")
    calls = []

    with pytest.raises(EngineDeposedError):
        a.fenced_write("wf", lambda: calls.append("ran"))

    assert calls == []


def test_store_fenced_write_checks_the_epoch(registry, store, clock):
    """The store's own fenced_write runs fn at the current epoch and refuses any other."""
    registry("a").acquire("wf")
    rotate_claim(store, "wf", clock=clock)

    assert store.fenced_write("wf", 2, lambda: "ok") == "ok"
    with pytest.raises(EngineDeposedError):
        store.fenced_write("wf", 1, lambda: "stale")
    with pytest.raises(EngineDeposedError):
        store.fenced_write("unknown", 1, lambda: "no row")


def test_fenced_write_propagates_errors_of_fn(registry):
    """An error raised by fn reaches the caller unchanged."""
    a = registry("a")
    a.acquire("wf")

    def fail():
        raise LookupError("checkpoint failed")

    with pytest.raises(LookupError, match="checkpoint failed"):
        a.fenced_write("wf", fail)
