"""One claim-protocol contract suite, run against the in-memory and the ORM store."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from claims.protocol import ClaimMetrics, ClaimRegistry, ClaimTiming
from claims.protocol.testing import FakeClock, MemoryClaimStore

from .stores import (
    RENEW_INTERVAL_MS,
    START_MS,
    TTL_MS,
    Arrangement,
    MemoryArrangement,
    OrmArrangement,
)


def orm_store_class(request: pytest.FixtureRequest) -> Any:
    """``OrmClaimStore`` with a test database, or a skip when either is unavailable."""
    if not request.config.pluginmanager.hasplugin("django"):
        pytest.skip("pytest-django is disabled, so the ORM store cannot run")
    store_module = pytest.importorskip("claims.store")
    request.getfixturevalue("db")
    return store_module.OrmClaimStore


@pytest.fixture(params=["memory", "orm"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def store(store_kind: str, request: pytest.FixtureRequest) -> Any:
    if store_kind == "memory":
        return MemoryClaimStore()
    return orm_store_class(request)()


@pytest.fixture
def arrange(store_kind: str, store: Any) -> Arrangement:
    return MemoryArrangement(store) if store_kind == "memory" else OrmArrangement(store)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START_MS)


@pytest.fixture
def timing() -> ClaimTiming:
    return ClaimTiming(ttl_ms=TTL_MS, renew_interval_ms=RENEW_INTERVAL_MS)


@pytest.fixture
def registry(
    store: Any, clock: FakeClock, timing: ClaimTiming
) -> Callable[..., ClaimRegistry]:
    """Build one engine's registry on the shared store and clock.

    ``on=`` puts a wrapper store in front of the shared one; every registry gets
    its own ``ClaimMetrics`` unless one is passed.
    """

    def make(engine_id: str, *, on: Any = None, **kwargs: Any) -> ClaimRegistry:
        kwargs.setdefault("metrics", ClaimMetrics())
        return ClaimRegistry(
            store if on is None else on,
            engine_id=engine_id,
            clock=clock,
            timing=timing,
            **kwargs,
        )

    return make
