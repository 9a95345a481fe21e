"""Many engines race acquire, takeover, renew, release and external rotations on 20 workflows.

Afterwards the ClaimEvent log, the final WorkflowClaim rows and every result each
engine saw must tell one consistent story: each grant is the previous epoch + 1,
no epoch is granted twice, and nobody believes in a claim the rows deny.
PostgreSQL: real processes, each its own Django and connection. Any database: threads.
"""

from __future__ import annotations

import json
import multiprocessing
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from claims.protocol.testing import FakeClock
from tests.integration._fleet import database_url

from ._race_checks import assert_race_had_teeth, check_race
from ._race_engine import (
    DURATION_S,
    ENGINE_COUNT,
    START_MS,
    advancing_clock,
    process_main,
    race_in_threads,
    race_workflow_ids,
    run_engine,
)

SEED = 20_240_917
STARTUP_TIMEOUT_S = 60
RUN_TIMEOUT_S = DURATION_S + 45


def print_summary(title: str, summary: dict[str, Any], wall_s: float) -> None:
    print(f"\n[{title}] {wall_s:.1f}s wall, {summary['ops']} calls")
    for key in ("results", "events", "cas_failures"):
        print(f"  {key}: {summary[key]}")
    print(
        f"  sum of final epochs: {summary['final_epochs']}, held at end: {summary['held_at_end']}, "
        f"takeovers judged for expiry: {summary['takeovers_judged']}"
    )


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.timeout(120)
@pytest.mark.django_db(transaction=True)
def test_engine_processes_racing_on_postgresql_agree_with_the_event_log(tmp_path: Path) -> None:
    """8 engine processes race the same 20 workflows; the log, the rows and every result agree."""
    if connection.vendor != "postgresql":
        pytest.skip(
            f"needs PostgreSQL (DATABASE_URL=postgres://...), not {connection.vendor}; "
            "the thread variant races this database"
        )
    started = time.monotonic()
    workflow_ids = race_workflow_ids()
    url = database_url(connection.settings_dict)
    context = multiprocessing.get_context("spawn")
    clock_value = context.Value("q", START_MS)
    ready = context.Semaphore(0)
    go = context.Event()

    def advance(ms: int) -> None:
        with clock_value.get_lock():
            clock_value.value += ms

    outputs = [tmp_path / f"engine-{index}.json" for index in range(ENGINE_COUNT)]
    processes = [
        context.Process(
            target=process_main,
            args=(index, url, clock_value, ready, go, SEED, workflow_ids, str(outputs[index])),
            name=f"engine-{index}",
        )
        for index in range(ENGINE_COUNT)
    ]
    for process in processes:
        process.start()
    try:
        waiting_since = time.monotonic()
        started_count = 0
        while started_count < ENGINE_COUNT:
            if ready.acquire(timeout=0.2):
                started_count += 1
                continue
            crashed = [p.name for p in processes if p.exitcode not in (None, 0)]
            assert not crashed, f"engines died during startup: {crashed}: {read_errors(outputs)}"
            assert time.monotonic() - waiting_since < STARTUP_TIMEOUT_S, "engines never got ready"
        with advancing_clock(advance):
            go.set()
            for process in processes:
                process.join(timeout=RUN_TIMEOUT_S)
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
                process.join()

    exit_codes = {process.name: process.exitcode for process in processes}
    assert all(code == 0 for code in exit_codes.values()), (exit_codes, read_errors(outputs))
    reports = [json.loads(path.read_text()) for path in outputs]
    summary = check_race(reports, workflow_ids)
    print_summary("postgresql, 8 processes", summary, time.monotonic() - started)
    assert_race_had_teeth(summary)


def read_errors(outputs: list[Path]) -> dict[str, str]:
    errors = {}
    for path in outputs:
        if path.exists():
            report = json.loads(path.read_text())
            if report.get("error"):
                errors[report["engine"]] = report["error"]
    return errors


def race_engine_threads(store_class: type[Any] | None = None) -> list[dict[str, Any]]:
    """Run ENGINE_COUNT engines as threads of this process, one connection each."""
    workflow_ids = race_workflow_ids()
    clock = FakeClock(START_MS)

    def engine(index: int) -> Callable[[], dict[str, Any]]:
        return lambda: run_engine(
            engine_id=f"engine-{index}",
            clock=clock,
            seed=SEED + index,
            workflow_ids=workflow_ids,
            store_class=store_class,
        )

    bodies = {f"engine-{index}": engine(index) for index in range(ENGINE_COUNT)}
    # Resolved on each racing thread: the proxy names that thread's own connection.
    return race_in_threads(
        bodies,
        clock.advance,
        timeout_s=RUN_TIMEOUT_S,
        prepare=lambda: connection.ensure_connection(),
    )


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.django_db(transaction=True)
def test_engine_threads_racing_agree_with_the_event_log() -> None:
    """8 engine threads (one connection each) race the same 20 workflows on the configured DB."""
    started = time.monotonic()

    reports = race_engine_threads()

    summary = check_race(reports, race_workflow_ids())
    print_summary(f"{connection.vendor}, 8 threads", summary, time.monotonic() - started)
    assert_race_had_teeth(summary)
