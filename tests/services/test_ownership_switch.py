"""Switching a fleet's ownership mode offline: refused while any engine runs, a marker
write otherwise; and what engines of the old mode left behind is taken over by the new
mode's engines at the next epoch (docs/design.md §12)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from claims.models import EngineSession, EngineStatus, OwnershipModeMarker, WorkflowClaim
from claims.protocol import (
    ClaimRegistry,
    ClaimTiming,
    PerClaimLeases,
    SessionLeases,
    ensure_ownership_mode,
)
from claims.protocol.errors import ConflictError, InvalidInputError, OwnershipModeMismatchError
from claims.protocol.session_lease import EngineSessionLease
from claims.protocol.testing import FakeClock
from claims.services.ownership import ownership_mode_switch
from claims.store import OrmClaimStore
from tests import factories

pytestmark = pytest.mark.django_db

T0 = 1_000_000_000
TIMING = ClaimTiming(ttl_ms=30_000, renew_interval_ms=5_000)
PAST_TAKEOVER = TIMING.ttl_ms + TIMING.grace_ms + 1


def established(mode: str) -> None:
    OwnershipModeMarker.objects.create(id=1, mode=mode, established_at_ms=T0)


@pytest.mark.parametrize("status", [EngineStatus.ACTIVE, EngineStatus.DISPOSING])
def test_a_switch_is_refused_while_an_engine_runs_and_changes_nothing(status: str) -> None:
    established("workflow-lease")
    factories.make_engine("e-running", status=status)
    factories.make_engine("e-gone", status=EngineStatus.STOPPED)

    with pytest.raises(ConflictError, match="e-running") as raised:
        ownership_mode_switch(mode="engine-lease", now_ms=T0 + 1, actor="op")

    assert "e-gone" not in str(raised.value)
    assert OwnershipModeMarker.objects.get().mode == "workflow-lease"
    assert OwnershipModeMarker.objects.get().established_at_ms == T0


def test_a_switch_with_every_engine_stopped_or_dead_rewrites_the_marker(caplog: Any) -> None:
    established("workflow-lease")
    factories.make_engine("e-stopped", status=EngineStatus.STOPPED)
    factories.make_engine("e-dead", status=EngineStatus.DEAD)

    with caplog.at_level(logging.WARNING, logger="weftboard.claims"):
        switch = ownership_mode_switch(mode="engine-lease", now_ms=T0 + 5, actor="op")

    assert (switch.previous, switch.mode, switch.switched) == (
        "workflow-lease",
        "engine-lease",
        True,
    )
    assert OwnershipModeMarker.objects.get().mode == "engine-lease"
    assert OwnershipModeMarker.objects.get().established_at_ms == T0 + 5
    assert [r.event for r in caplog.records if hasattr(r, "event")] == ["ownership-mode-switched"]
    store, clock = OrmClaimStore(), FakeClock(T0 + 10)
    assert ensure_ownership_mode(store, "engine-lease", clock)[0] == "engine-lease"
    with pytest.raises(OwnershipModeMismatchError):
        ensure_ownership_mode(store, "workflow-lease", clock)


def test_switching_to_the_mode_in_force_changes_nothing() -> None:
    established("engine-lease")

    switch = ownership_mode_switch(mode="engine-lease", now_ms=T0 + 5, actor="op")

    assert switch.switched is False
    assert OwnershipModeMarker.objects.get().established_at_ms == T0


@pytest.mark.parametrize("mode", ["lease", "Engine-Lease", ""])
def test_a_mode_no_engine_runs_is_refused(mode: str) -> None:
    established("workflow-lease")

    with pytest.raises(InvalidInputError, match="workflow-lease, engine-lease"):
        ownership_mode_switch(mode=mode, now_ms=T0 + 5, actor="op")

    assert OwnershipModeMarker.objects.get().mode == "workflow-lease"


def test_the_command_shows_switches_and_refuses_with_the_reason(capsys: Any) -> None:
    call_command("ownership_mode")
    assert "no engine has started yet" in capsys.readouterr().out

    call_command("ownership_mode", "--switch-to", "engine-lease")
    assert "start the engines with WEFT_OWNERSHIP_MODE=engine-lease" in capsys.readouterr().out
    call_command("ownership_mode")
    assert capsys.readouterr().out.startswith("engine-lease")

    factories.make_engine("e-1")
    with pytest.raises(CommandError, match="stop these first"):
        call_command("ownership_mode", "--switch-to", "workflow-lease")
    assert OwnershipModeMarker.objects.get().mode == "engine-lease"


def registry(engine_id: str, clock: FakeClock, *, session: bool) -> ClaimRegistry:
    store = OrmClaimStore()
    lease = EngineSessionLease(store, engine_id=engine_id, clock=clock, timing=TIMING)
    liveness = SessionLeases(lease) if session else PerClaimLeases()
    return ClaimRegistry(store, engine_id=engine_id, clock=clock, timing=TIMING, liveness=liveness)


def test_claims_a_crashed_engine_lease_engine_left_are_taken_over_after_a_switch() -> None:
    """Its session expired without being closed; a workflow-lease engine closes it once
    and holds its claims at the next epoch, each with an expiry of its own."""
    clock = FakeClock(T0)
    crashed = registry("e-old", clock, session=True)
    assert crashed.acquire("wf-1").status == "acquired"
    clock.advance(PAST_TAKEOVER)

    successor = registry("e-new", clock, session=False)
    result = successor.takeover("wf-1")

    assert (result.status, result.epoch) == ("acquired", 2)
    row = WorkflowClaim.objects.get(pk="wf-1")
    assert (row.holder_engine_id, row.holder_session_epoch) == ("e-new", None)
    assert row.holder_expires_at_ms == clock() + TIMING.ttl_ms
    assert EngineSession.objects.get(pk="e-old").closed_by == "e-new"


def test_claims_a_crashed_workflow_lease_engine_left_are_taken_over_after_a_switch() -> None:
    clock = FakeClock(T0)
    crashed = registry("e-old", clock, session=False)
    assert crashed.acquire("wf-1").status == "acquired"
    clock.advance(PAST_TAKEOVER)

    successor = registry("e-new", clock, session=True)
    result = successor.takeover("wf-1")

    assert (result.status, result.epoch) == ("acquired", 2)
    row = WorkflowClaim.objects.get(pk="wf-1")
    assert (row.holder_engine_id, row.holder_expires_at_ms) == ("e-new", None)
    assert row.holder_session_epoch == EngineSession.objects.get(pk="e-new").epoch
