"""An operator's forced takeover and a start with an engine grant the claim for as long as
the engine's session lives when the engine holds one (the engine-lease mode), and the
engine adopts it under that session (docs/design.md §12)."""

from __future__ import annotations

from typing import Any

import pytest

from claims.fleet_clock import fleet_clock
from claims.models import EngineSession
from claims.models.errors import SessionRowsAreKeptError
from claims.protocol import ClaimRegistry, ClaimTiming, Holder, SessionLeases
from claims.protocol.session_lease import EngineSessionLease
from claims.services.claims import claim_force_takeover_and_notify
from claims.services.workflows import workflow_start
from claims.store import OrmClaimStore

from .conftest import EPOCH, WORLD

pytestmark = pytest.mark.usefixtures(*WORLD)


def holder_of(workflow_id: str) -> Holder | None:
    row = OrmClaimStore().read_claim(workflow_id)
    assert row is not None
    return row.holder


def session_engine(engine_id: str) -> ClaimRegistry:
    """A registry for ``engine_id`` under a session it has just opened."""
    store, clock, timing = OrmClaimStore(), fleet_clock(), ClaimTiming()
    session = EngineSessionLease(store, engine_id=engine_id, clock=clock, timing=timing)
    assert session.open().status == "opened"
    return ClaimRegistry(
        store, engine_id=engine_id, clock=clock, timing=timing, liveness=SessionLeases(session)
    )


def test_a_forced_takeover_to_an_engine_under_a_session_names_that_session(
    operator: Any,
) -> None:
    target = session_engine("e-2")

    epoch = claim_force_takeover_and_notify(
        "wf-1", expected_epoch=EPOCH, target_engine_id="e-2", actor="operator", reason="move"
    ).epoch

    holder = holder_of("wf-1")
    assert holder is not None
    assert (holder.engine_id, holder.epoch, holder.expires_at_ms, holder.session_epoch) == (
        "e-2",
        EPOCH + 1,
        None,
        1,
    )
    assert target.adopt("wf-1", epoch).status == "adopted"
    assert target.within_deadline("wf-1")


def test_a_forced_takeover_to_an_engine_without_a_session_keeps_its_own_expiry(
    operator: Any,
) -> None:
    claim_force_takeover_and_notify(
        "wf-1", expected_epoch=EPOCH, target_engine_id="e-2", actor="operator", reason="move"
    )

    holder = holder_of("wf-1")
    assert holder is not None
    assert holder.session_epoch is None
    assert holder.expires_at_ms is not None


def test_a_per_claim_grant_is_not_adopted_by_an_engine_under_a_session(operator: Any) -> None:
    """Its claims are renewed only through the session: a grant with its own expiry would
    lapse in its hands, so it refuses it and lets reclaim take the workflow."""
    epoch = claim_force_takeover_and_notify(
        "wf-1", expected_epoch=EPOCH, target_engine_id="e-2", actor="operator", reason="move"
    ).epoch
    target = session_engine("e-2")

    assert target.adopt("wf-1", epoch).status == "not-held"


def test_a_start_with_an_engine_under_a_session_names_that_session() -> None:
    session_engine("e-2")

    workflow_start(workflow_type="order", workflow_id="wf-new", engine_id="e-2")

    holder = holder_of("wf-new")
    assert holder == Holder("e-2", 1, None, holder.claimed_at_ms if holder else None, 1)


def test_a_forced_takeover_never_names_a_session_that_is_expired(operator: Any) -> None:
    """An engine whose session expired is dead or dying: a claim naming that session would
    be takeover-eligible at once, so the grant carries its own expiry instead."""
    long_ago = fleet_clock()() - 10_000_000
    EngineSession.objects.create(
        engine_id="e-2",
        epoch=3,
        expires_at_ms=long_ago,
        renewed_at_ms=long_ago - 30_000,
        started_at_ms=long_ago - 60_000,
    )

    claim_force_takeover_and_notify(
        "wf-1", expected_epoch=EPOCH, target_engine_id="e-2", actor="operator", reason="move"
    )

    holder = holder_of("wf-1")
    assert holder is not None
    assert holder.session_epoch is None
    assert holder.expires_at_ms is not None


def test_session_rows_are_kept_for_good() -> None:
    """Deleting one would let its engine open epoch 1 again, and revive a claim that names
    an old epoch 1."""
    session_engine("e-2")

    with pytest.raises(SessionRowsAreKeptError):
        EngineSession.objects.all().delete()
    with pytest.raises(SessionRowsAreKeptError):
        EngineSession.objects.get(engine_id="e-2").delete()
    assert EngineSession.objects.count() == 1
