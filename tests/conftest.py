"""Shared test configuration."""

from __future__ import annotations

import os
from typing import Any

import hypothesis
import pytest
from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from django.test import Client

# The suite runs on parallel workers beside engines, browsers and web servers on two cores:
# Hypothesis's timing checks (an example's deadline, data generation "too slow") judge the
# machine's load, not the code. Speed goals live in benchmarks/, never in tests.
hypothesis.settings.register_profile(
    "suite", deadline=None, suppress_health_check=[hypothesis.HealthCheck.too_slow]
)
hypothesis.settings.load_profile("suite")


def pytest_configure() -> None:
    from tests import suite_settings

    suite_settings.apply(settings)


def require_service(name: str, reachable: bool, reason: str) -> None:
    """Carry on when `name` is reachable; otherwise skip with `reason`, or fail in CI.

    CI sets WEFTBOARD_REQUIRE_SERVICES=1 so that a missing service cannot pass as a skip.
    """
    if reachable:
        return
    if os.environ.get("WEFTBOARD_REQUIRE_SERVICES", "").strip() == "1":
        pytest.fail(f"{name} is required (WEFTBOARD_REQUIRE_SERVICES=1) but unreachable: {reason}")
    pytest.skip(f"{name} unreachable: {reason}")


def forget_rate_counts() -> None:
    """Forget what the per-user read and write limits counted (claims.http.rate_limit)."""
    backend = caches["default"]
    if not isinstance(backend, RedisCache):
        backend.clear()
        return
    # Only the limits' keys: the cache may share its Redis database with the broker.
    client = backend._cache.get_client(write=True)  # type: ignore[attr-defined]
    keys = list(client.scan_iter(match=backend.make_key("weftboard:rate:*")))
    if keys:
        client.delete(*keys)


@pytest.fixture(autouse=True)
def _fresh_rate_counts() -> None:
    """The limits count in the cache, which outlives a test's transaction, and on SQLite
    user ids repeat from one test to the next: each test starts with nothing counted."""
    forget_rate_counts()


# Signed-in clients for the ``operator`` and ``viewer`` users each test package defines
# with the permissions it needs.
def _signed_in(user: Any) -> Client:
    # The process-wide fleet clock calibrates against the database on first use; do it
    # here, so query counts do not depend on which test happened to run first.
    from claims.fleet_clock import fleet_clock

    fleet_clock()
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def operator_client(operator: Any) -> Client:
    return _signed_in(operator)


@pytest.fixture
def viewer_client(viewer: Any) -> Client:
    return _signed_in(viewer)


@pytest.fixture
def sent_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The broker boundary of the bulk jobs: the run a created job sends once committed is
    recorded (its job id), never sent."""
    sent: list[int] = []
    monkeypatch.setattr("claims.services.bulk._start_run", sent.append)
    return sent
