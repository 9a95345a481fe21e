"""The ownership mode is one liveness strategy per registry, chosen where the registry is
built (docs/design.md §3, §12)."""

from __future__ import annotations

import pytest

from claims.protocol import ClaimRegistry, ClaimTiming, PerClaimLeases, SessionLeases
from claims.protocol.session_lease import EngineSessionLease
from claims.protocol.testing import FakeClock, MemoryClaimStore

TIMING = ClaimTiming()


def build(engine_id: str, liveness: PerClaimLeases | SessionLeases | None) -> ClaimRegistry:
    return ClaimRegistry(
        MemoryClaimStore(),
        engine_id=engine_id,
        clock=FakeClock(0),
        timing=TIMING,
        liveness=liveness,
    )


def test_a_registry_built_without_a_strategy_holds_claims_by_their_own_expiry() -> None:
    registry = build("engine-a", None)

    result = registry.acquire("wf-1")

    assert isinstance(registry.liveness, PerClaimLeases)
    assert registry.session is None
    assert (result.status, result.expires_at_ms) == ("acquired", TIMING.ttl_ms)
    held = registry.held_claim("wf-1")
    assert held is not None
    assert held.session_epoch is None


def test_under_session_leases_a_grant_names_the_session_and_has_no_expiry() -> None:
    store, clock = MemoryClaimStore(), FakeClock(0)
    lease = EngineSessionLease(store, engine_id="engine-a", clock=clock, timing=TIMING)
    registry = ClaimRegistry(
        store, engine_id="engine-a", clock=clock, timing=TIMING, liveness=SessionLeases(lease)
    )

    result = registry.acquire("wf-1")

    assert registry.session is lease
    assert (result.status, result.expires_at_ms) == ("acquired", None)
    held = registry.held_claim("wf-1")
    assert held is not None
    assert held.session_epoch == 1
    assert registry.within_deadline("wf-1")


@pytest.mark.parametrize("strategy", ["per-claim", "session"])
def test_one_strategy_serves_one_registry(strategy: str) -> None:
    """A strategy holds one registry's liveness (its renewals, its session): a second
    registry must build its own, or two caches would share one."""
    if strategy == "per-claim":
        liveness: PerClaimLeases | SessionLeases = PerClaimLeases()
    else:
        lease = EngineSessionLease(
            MemoryClaimStore(), engine_id="engine-a", clock=FakeClock(0), timing=TIMING
        )
        liveness = SessionLeases(lease)
    build("engine-a", liveness)

    with pytest.raises(ValueError, match="serves one registry"):
        build("engine-a", liveness)


def test_a_session_of_another_engine_is_refused() -> None:
    lease = EngineSessionLease(
        MemoryClaimStore(), engine_id="engine-b", clock=FakeClock(0), timing=TIMING
    )

    with pytest.raises(ValueError, match="must belong to the registry's engine"):
        build("engine-a", SessionLeases(lease))
