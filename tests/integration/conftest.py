"""Fixtures for the multi-process engine tests: services, the fleet, and logs on failure."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from tests.conftest import require_service

from ._fleet import (
    Fleet,
    configured_redis_url,
    database_url,
    engine_broker_url,
    redis_flush,
    redis_reachable,
)


@pytest.fixture
def engine_services() -> None:
    """PostgreSQL as the test database (engines are other processes)."""
    if connection.vendor == "sqlite":
        # Not a missing service: CI runs the whole suite once on SQLite on purpose.
        pytest.skip("engine integration tests run on PostgreSQL")
    require_service(
        "PostgreSQL",
        connection.vendor == "postgresql",
        f"the test database is {connection.vendor}; set DATABASE_URL=postgres://...",
    )


def require_redis() -> str:
    """A reachable Redis for the engines' broker: its URL, flushed."""
    url = configured_redis_url()
    reachable, reason = redis_reachable(url)
    require_service("Redis", reachable, reason)
    broker = engine_broker_url(url)
    redis_flush(broker)
    return broker


@pytest.fixture
def fleet(
    request: pytest.FixtureRequest, engine_services: None, transactional_db: None, tmp_path: Path
) -> Iterator[Fleet]:
    """Engines are other processes, so test data must commit (transactional_db); the fleet
    is torn down before the database is flushed.

    The broker is Redis, or the embedded spool (in this test's own folder) for a test
    parametrized with ``@pytest.mark.parametrize("fleet", ["spool"], indirect=True)``;
    ``"redis+engine-lease"`` runs the engines in the engine-lease ownership mode.
    """
    broker_name, _, mode = str(getattr(request, "param", "redis")).partition("+")
    broker = "spool://" if broker_name == "spool" else require_redis()
    running = Fleet(
        tmp_path,
        database_url=database_url(connection.settings_dict),
        broker_url=broker,
        var_dir=tmp_path / "var",
        ownership_mode=mode or "workflow-lease",
    )
    try:
        yield running
    finally:
        running.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[Any]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failing fleet test shows the tail of every process log."""
    report = yield
    running = getattr(item, "funcargs", {}).get("fleet")
    if report.failed and report.when == "call" and isinstance(running, Fleet):
        report.sections.append(("engine logs", running.report()))
    return report
