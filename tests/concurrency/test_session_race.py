"""A session renewal racing takeovers that close the session once it is expired: the
compare-and-swap on the expiry lets exactly one of them apply, and the owner is told.
Any database and the memory store: threads. PostgreSQL: real processes, each its own
Django and connection."""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from claims.protocol.testing import FakeClock, MemoryClaimStore
from tests.integration._fleet import database_url

from ._race_engine import START_MS, advancing_clock, race_in_threads
from ._session_race import (
    OWNER,
    RIVAL_COUNT,
    check_session_race,
    process_main,
    run_owner,
    run_rival,
)

SEED = 20_261_203
RUN_TIMEOUT_S = 60


def race_threads(make_store: Any, *, connect: bool) -> tuple[list[dict[str, Any]], Any]:
    """The owner and the rivals as threads of this process, each with its own store (and
    connection, when ``connect``); returns their reports and the session row at the end."""
    clock = FakeClock(START_MS)
    bodies: dict[str, Callable[[], dict[str, Any]]] = {
        "owner": lambda: run_owner(make_store(), clock, SEED)
    }
    for index in range(RIVAL_COUNT):
        name = f"rival-{index}"
        bodies[name] = lambda name=name: run_rival(make_store(), clock, name)  # type: ignore[misc]
    # Resolved on each racing thread: the proxy names that thread's own connection.
    prepare = (lambda: connection.ensure_connection()) if connect else (lambda: None)
    reports = race_in_threads(bodies, clock.advance, timeout_s=RUN_TIMEOUT_S, prepare=prepare)
    return reports, make_store().read_session(OWNER)


def assert_had_teeth(summary: dict[str, Any]) -> None:
    """The race must have closed sessions and told the owner, or it proved nothing."""
    print(f"\n[session race] {summary}")
    assert summary["closes"] >= 3, summary
    assert summary["owner"].get("lost", 0) >= 3, summary
    assert summary["owner"].get("renewed", 0) >= 10, summary


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_session_renewal_racing_takeover_threads_on_the_memory_store() -> None:
    shared = MemoryClaimStore()

    reports, final = race_threads(lambda: shared, connect=False)

    assert_had_teeth(check_session_race(reports, final))


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.django_db(transaction=True)
def test_session_renewal_racing_takeover_threads_on_the_database() -> None:
    from claims.store import OrmClaimStore

    reports, final = race_threads(OrmClaimStore, connect=True)

    assert_had_teeth(check_session_race(reports, final))


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.timeout(120)
@pytest.mark.django_db(transaction=True)
def test_session_renewal_racing_takeover_processes_on_postgresql(tmp_path: Path) -> None:
    if connection.vendor != "postgresql":
        pytest.skip(
            f"needs PostgreSQL (DATABASE_URL=postgres://...), not {connection.vendor}; "
            "the thread variant races this database"
        )
    from claims.store import OrmClaimStore

    context = multiprocessing.get_context("spawn")
    clock_value = context.Value("q", START_MS)
    ready, go = context.Semaphore(0), context.Event()

    def advance(ms: int) -> None:
        with clock_value.get_lock():
            clock_value.value += ms

    roles = ["owner", *(f"rival-{index}" for index in range(RIVAL_COUNT))]
    outputs = [tmp_path / f"{name}.json" for name in roles]
    url = database_url(connection.settings_dict)
    processes = [
        context.Process(
            target=process_main,
            args=(name, url, clock_value, ready, go, SEED, str(out)),
            name=name,
        )
        for name, out in zip(roles, outputs, strict=True)
    ]
    for process in processes:
        process.start()
    try:
        for _ in processes:
            assert ready.acquire(timeout=RUN_TIMEOUT_S), "a racing process never got ready"
        with advancing_clock(advance):
            go.set()
            for process in processes:
                process.join(timeout=RUN_TIMEOUT_S)
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
                process.join()
    reports = [json.loads(path.read_text()) for path in outputs]
    assert all(process.exitcode == 0 for process in processes), [r["error"] for r in reports]

    summary = check_session_race(reports, OrmClaimStore().read_session(OWNER))

    assert_had_teeth(summary)
