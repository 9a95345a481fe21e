"""ensure_ownership_mode: the boot-time ownership-mode gate (docs/design.md §3)."""

from __future__ import annotations

import pytest

from claims.protocol import (
    OwnershipMarkerUnreadableError,
    OwnershipModeMismatchError,
    ensure_ownership_mode,
)

from .stores import START_MS


def test_ownership_gate_establishes_then_accepts_same_mode(store, clock):
    """The first engine writes the marker; later engines of the same mode pass and keep it."""
    assert store.read_ownership_mode() is None

    assert ensure_ownership_mode(store, "workflow-lease", clock) == ("workflow-lease", START_MS)
    clock.advance(60_000)
    assert ensure_ownership_mode(store, "workflow-lease", clock) == ("workflow-lease", START_MS)
    assert store.read_ownership_mode() == ("workflow-lease", START_MS)


def test_ownership_gate_mismatch_raises_with_attributes(store, clock):
    """An engine of another mode is refused with both modes and the establishment time."""
    ensure_ownership_mode(store, "lease", clock)
    clock.advance(5)

    with pytest.raises(OwnershipModeMismatchError) as raised:
        ensure_ownership_mode(store, "workflow-lease", clock)

    error = raised.value
    assert error.configured_mode == "workflow-lease"
    assert error.stored_mode == "lease"
    assert error.established_at_ms == START_MS
    assert "workflow-lease" in str(error)
    assert "'lease'" in str(error)
    assert store.read_ownership_mode() == ("lease", START_MS)


def test_ownership_gate_never_overwrites_unreadable_marker(store, arrange, clock):
    """A marker with an unknown mode fails the boot and is left exactly as it was."""
    arrange.put_marker("bogus", 1)

    for mode in ("lease", "workflow-lease"):
        with pytest.raises(OwnershipMarkerUnreadableError):
            ensure_ownership_mode(store, mode, clock)

    assert store.read_ownership_mode() == ("bogus", 1)


def test_ownership_gate_rejects_an_unknown_configured_mode(store, clock):
    """A bad configured mode is a ValueError and writes no marker."""
    with pytest.raises(ValueError, match="ownership mode"):
        ensure_ownership_mode(store, "lease-ish", clock)

    assert store.read_ownership_mode() is None


def test_ownership_marker_insert_is_if_absent(store):
    """Only the first marker insert applies; the second reports it did nothing."""
    assert store.insert_ownership_mode("lease", 10) is True
    assert store.insert_ownership_mode("workflow-lease", 20) is False
    assert store.read_ownership_mode() == ("lease", 10)


@pytest.mark.parametrize(
    ("established", "configured"),
    [("workflow-lease", "engine-lease"), ("engine-lease", "workflow-lease")],
)
def test_a_fleet_keeps_the_mode_its_first_engine_established(store, clock, established, configured):
    """An engine-lease engine is refused by a workflow-lease fleet and the other way round,
    and the refusal changes nothing."""
    assert ensure_ownership_mode(store, established, clock) == (established, START_MS)
    clock.advance(1_000)

    with pytest.raises(OwnershipModeMismatchError) as raised:
        ensure_ownership_mode(store, configured, clock)

    assert (raised.value.configured_mode, raised.value.stored_mode) == (configured, established)
    assert store.read_ownership_mode() == (established, START_MS)
    assert ensure_ownership_mode(store, established, clock) == (established, START_MS)
