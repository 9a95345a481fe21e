"""One racing engine: random claim calls on shared workflow ids, every result recorded.

Spawned child processes import this module before Django is set up, so nothing
here imports Django, the models or the store at module level.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

START_MS = 1_700_000_000_000
TTL_MS = 3_000
RENEW_INTERVAL_MS = 1_000
# The fake clock jumps this far every CLOCK_TICK_S of real time: a claim nobody renews
# is expired (TTL + 2 x renew interval = 5 s of fake time) a few ticks after its grant.
CLOCK_STEP_MS = 1_500
CLOCK_TICK_S = 0.010

WORKFLOW_COUNT = 20
ENGINE_COUNT = 8
DURATION_S = 4.0
MAX_OPS = 3_000

OPS = ("acquire", "takeover", "renew", "release", "rotate")
OP_WEIGHTS = (30, 30, 20, 14, 6)

# (op, workflow_id, status, epoch, engine_id, held_by, expires_at_ms)
Result = tuple[str, str, str, int | None, str, str | None, int | None]


def race_workflow_ids(count: int = WORKFLOW_COUNT) -> list[str]:
    return [f"race-wf-{index:02d}" for index in range(count)]


@contextmanager
def advancing_clock(advance: Callable[[int], object]) -> Iterator[None]:
    """Advance a shared fake clock by CLOCK_STEP_MS every CLOCK_TICK_S until the block ends."""
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(CLOCK_TICK_S):
            advance(CLOCK_STEP_MS)

    ticker = threading.Thread(target=tick, name="fake-clock", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        stop.set()
        ticker.join()


def run_engine(
    *,
    engine_id: str,
    clock: Callable[[], int],
    seed: int,
    workflow_ids: list[str],
    duration_s: float = DURATION_S,
    max_ops: int = MAX_OPS,
    store_class: type[Any] | None = None,
) -> dict[str, Any]:
    """Race random claim calls until the time or the op budget runs out; report everything seen.

    Runs on the calling thread with this thread's Django connection (Django must be set up).
    """
    from django.db import transaction

    from claims.protocol import ClaimRegistry, ClaimTiming, StaleEpochError, rotate_claim
    from claims.store import OrmClaimStore

    cas_failures: dict[str, int] = {"cas_insert": 0, "cas_grant": 0, "cas_rotate": 0}

    class CountingStore(store_class or OrmClaimStore):  # type: ignore[misc]
        """Counts the compare-and-swaps that lost: proof that the race really raced."""

        def cas_insert(self, *args: Any, **kwargs: Any) -> bool:
            applied = super().cas_insert(*args, **kwargs)
            cas_failures["cas_insert"] += not applied
            return applied

        def cas_grant(self, *args: Any, **kwargs: Any) -> bool:
            applied = super().cas_grant(*args, **kwargs)
            cas_failures["cas_grant"] += not applied
            return applied

        def cas_rotate(self, *args: Any, **kwargs: Any) -> bool:
            applied = super().cas_rotate(*args, **kwargs)
            cas_failures["cas_rotate"] += not applied
            return applied

    store = CountingStore()
    registry = ClaimRegistry(
        store,
        engine_id=engine_id,
        clock=clock,
        timing=ClaimTiming(ttl_ms=TTL_MS, renew_interval_ms=RENEW_INTERVAL_MS),
    )
    rng = random.Random(seed)
    results: list[Result] = []
    deadline = time.monotonic() + duration_s
    ops = 0
    while ops < max_ops and time.monotonic() < deadline:
        ops += 1
        op = rng.choices(OPS, OP_WEIGHTS)[0]
        held = registry.held_workflow_ids()
        if op in ("renew", "release") and not held:
            op = "acquire"
        if op == "rotate":
            workflow_id = rng.choice(workflow_ids)
            try:
                with transaction.atomic():
                    epoch = rotate_claim(store, workflow_id, clock=clock)
            except StaleEpochError:
                results.append((op, workflow_id, "stale", None, engine_id, None, None))
            else:
                results.append((op, workflow_id, "rotated", epoch, engine_id, None, None))
            continue
        if op == "renew":
            workflow_id = rng.choice(held)
            result = registry.renew(workflow_id)
        elif op == "release":
            workflow_id = rng.choice(held)
            cached = registry.current_epoch(workflow_id)
            roll = rng.random()
            if cached is not None and roll < 0.3:
                result = registry.release(workflow_id, expected_epoch=cached)
            elif cached is not None and roll < 0.4:
                # A stale expectation: must answer not-held and leave the claim alone.
                result = registry.release(workflow_id, expected_epoch=cached + 1)
                op = "release-wrong-epoch"
            else:
                result = registry.release(workflow_id)
        else:
            workflow_id = rng.choice(workflow_ids)
            result = (
                registry.acquire(workflow_id) if op == "acquire" else registry.takeover(workflow_id)
            )
        results.append(
            (
                op,
                workflow_id,
                result.status,
                result.epoch,
                engine_id,
                result.held_by,
                result.expires_at_ms,
            )
        )
    held_claims = []
    for workflow_id in registry.held_workflow_ids():
        holder = registry.held_claim(workflow_id)
        if holder is not None:
            held_claims.append((workflow_id, holder.epoch))
    return {
        "engine": engine_id,
        "ops": ops,
        "results": results,
        "held": held_claims,
        "cas_failures": cas_failures,
        "error": None,
    }


def process_main(
    index: int,
    database_url: str,
    clock_value: Any,
    ready: Any,
    go: Any,
    seed: int,
    workflow_ids: list[str],
    out_path: str,
) -> None:
    """Entry point of one spawned engine process: its own Django, connection and registry."""
    engine_id = f"engine-{index}"
    run_spawned(
        {"engine": engine_id, "error": None},
        database_url,
        (clock_value, ready, go),
        out_path,
        lambda clock: run_engine(
            engine_id=engine_id, clock=clock, seed=seed + index, workflow_ids=workflow_ids
        ),
    )


def run_spawned(
    report: dict[str, Any],
    database_url: str,
    shared: tuple[Any, Any, Any],
    out_path: str,
    body: Callable[[Callable[[], int]], dict[str, Any]],
) -> None:
    """The frame of one spawned racing process: set up its own Django and connection, say
    it is ready, wait for the parent's start signal, then run ``body`` on the shared clock.
    ``shared`` is (clock value, ready semaphore, go event). Writes ``body``'s report, or
    ``report`` with the error, to ``out_path``; exits 1 on an error."""
    clock_value, ready, go = shared
    os.environ["DJANGO_SETTINGS_MODULE"] = "weftboard.settings"
    os.environ["DATABASE_URL"] = database_url
    os.environ["WEFTBOARD_DEBUG"] = "1"
    try:
        import django

        django.setup()
        from django.db import connection

        connection.ensure_connection()
        ready.release()
        if not go.wait(timeout=90):
            raise RuntimeError("the parent never gave the start signal")

        def clock() -> int:
            return int(clock_value.value)

        report = body(clock)
    except BaseException:
        report["error"] = traceback.format_exc()
    finally:
        try:
            from django.db import connections

            connections.close_all()
        except Exception:
            if report.get("error") is None:
                report["error"] = traceback.format_exc()
        tmp = Path(out_path).with_suffix(".tmp")
        tmp.write_text(json.dumps(report))
        tmp.replace(out_path)
    if report.get("error") is not None:
        raise SystemExit(1)


def race_in_threads(
    bodies: dict[str, Callable[[], dict[str, Any]]],
    advance: Callable[[int], object],
    *,
    timeout_s: float,
    prepare: Callable[[], object] = lambda: None,
) -> list[dict[str, Any]]:
    """Run each body on a thread of its own (named by its key), all released at once and
    raced on a clock that ``advance`` moves; return their reports. Each thread runs
    ``prepare`` first (opening its connection) and closes its connection at the end. A
    body that raises fails the race with its traceback; a thread that hangs fails it too.
    Reports come in the order of ``bodies``."""
    from django.db import connection

    barrier = threading.Barrier(len(bodies) + 1)
    reports: dict[str, dict[str, Any]] = {}
    errors: list[str] = []

    def race(name: str) -> None:
        try:
            prepare()
            barrier.wait(timeout=timeout_s)
            reports[name] = bodies[name]()
        except BaseException:
            # Not swallowed: a store error (e.g. "database is locked") fails the test.
            errors.append(f"{name}: {traceback.format_exc()}")
            barrier.abort()
        finally:
            connection.close()

    threads = [threading.Thread(target=race, args=(name,), name=name) for name in bodies]
    for thread in threads:
        thread.start()
    try:
        barrier.wait(timeout=timeout_s)
        with advancing_clock(advance):
            for thread in threads:
                thread.join(timeout=timeout_s)
    except threading.BrokenBarrierError:
        for thread in threads:
            thread.join(timeout=timeout_s)
    assert not errors, "\n".join(errors)
    assert not any(thread.is_alive() for thread in threads), "a racing thread hung"
    return [reports[name] for name in bodies if name in reports]
