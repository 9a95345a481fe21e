"""A session renewal racing takeovers that close the session once it is expired: the
compare-and-swap on the expiry lets exactly one of them apply, and the owner is told.
Any database and the memory store: threads. PostgreSQL: real processes, each its own
Django and connection."""

from __future__ import annotations

import json
import multiprocessing
import threading
import traceback
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from claims.protocol.testing import FakeClock, MemoryClaimStore
from tests.integration._fleet import database_url

from ._race_engine import START_MS, advancing_clock
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


def race_threads(make_store: Any) -> tuple[list[dict[str, Any]], Any]:
    clock = FakeClock(START_MS)
    reports: list[dict[str, Any]] = []
    errors: list[str] = []
    barrier = threading.Barrier(RIVAL_COUNT + 2)

    def role(name: str) -> None:
        try:
            store = make_store()
            barrier.wait(timeout=RUN_TIMEOUT_S)
            if name == "owner":
                reports.append(run_owner(store, clock, SEED))
            else:
                reports.append(run_rival(store, clock, name))
        except BaseException:
            errors.append(f"{name}: {traceback.format_exc()}")
            barrier.abort()
        finally:
            connection.close()

    names = ["owner", *(f"rival-{index}" for index in range(RIVAL_COUNT))]
    threads = [threading.Thread(target=role, args=(name,), name=name) for name in names]
    for thread in threads:
        thread.start()
    try:
        barrier.wait(timeout=RUN_TIMEOUT_S)
        with advancing_clock(clock.advance):
            for thread in threads:
                thread.join(timeout=RUN_TIMEOUT_S)
    except threading.BrokenBarrierError:
        for thread in threads:
            thread.join(timeout=RUN_TIMEOUT_S)
    assert not errors, "\n".join(errors)
    assert not any(thread.is_alive() for thread in threads), "a racing thread hung"
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

    reports, final = race_threads(lambda: shared)

    assert_had_teeth(check_session_race(reports, final))


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.django_db(transaction=True)
def test_session_renewal_racing_takeover_threads_on_the_database() -> None:
    from claims.store import OrmClaimStore

    reports, final = race_threads(OrmClaimStore)

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
