"""Shared test configuration."""

from __future__ import annotations

import os

import pytest


def require_service(name: str, reachable: bool, reason: str) -> None:
    """Carry on when `name` is reachable; otherwise skip with `reason`, or fail in CI.

    CI sets WEFTBOARD_REQUIRE_SERVICES=1 so that a missing service cannot pass as a skip.
    """
    if reachable:
        return
    if os.environ.get("WEFTBOARD_REQUIRE_SERVICES", "").strip() == "1":
        pytest.fail(f"{name} is required (WEFTBOARD_REQUIRE_SERVICES=1) but unreachable: {reason}")
    pytest.skip(f"{name} unreachable: {reason}")
