"""Shared test configuration."""

from __future__ import annotations

import os
from typing import Any

import pytest
from django.test import Client


def require_service(name: str, reachable: bool, reason: str) -> None:
    """Carry on when `name` is reachable; otherwise skip with `reason`, or fail in CI.

    CI sets WEFTBOARD_REQUIRE_SERVICES=1 so that a missing service cannot pass as a skip.
    """
    if reachable:
        return
    if os.environ.get("WEFTBOARD_REQUIRE_SERVICES", "").strip() == "1":
        pytest.fail(f"{name} is required (WEFTBOARD_REQUIRE_SERVICES=1) but unreachable: {reason}")
    pytest.skip(f"{name} unreachable: {reason}")


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
