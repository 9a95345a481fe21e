"""Engines of a benchmark's fleet in processes of their own (``discovery_child``), started
on the seeded claims and ticked together from one instant the parent chooses."""

from __future__ import annotations

import multiprocessing
import queue
import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.db import connection

from claims.protocol import ClaimTiming

from . import discovery_child
from .bulk_child import database_url
from .seed import Layout, clear, seed

T = TypeVar("T")
READY_TIMEOUT_S = 600.0


def seed_held_sessions(total: int, engines: int, timing: ClaimTiming) -> None:
    """An empty fleet, then ``total`` running workflows held by ``engines`` engines
    (``bench-live-*``) under session 1 of each, which the engines open when they start."""
    clear()
    seed(
        Layout(
            total=total,
            now_ms=int(time.time() * 1000),
            ttl_ms=timing.ttl_ms,
            renew_interval_ms=timing.renew_interval_ms,
            held=total,
            live_engines=engines,
            sessions=True,
        )
    )


def _get(answers: Any, processes: list[Any], timeout_s: float) -> Any:
    """The next answer of the engines' processes; an error as soon as one of them died
    without answering, rather than at the timeout."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            return answers.get(timeout=1)
        except queue.Empty:
            dead = [p.name for p in processes if p.exitcode not in (None, 0)]
            if dead:
                raise RuntimeError(f"engine processes {dead} died") from None
    raise RuntimeError("the benchmark's engines did not answer in time")


def run_together(
    engine_ids: list[str],
    *,
    interval_ms: int,
    warmup_ticks: int,
    measured_ticks: int,
    legacy: bool,
    watch: Callable[[float], T],
    beat: bool = True,
) -> tuple[list[dict[str, Any]], T]:
    """Run the engines for warmup_ticks + measured_ticks ticks from t0 (a wall-clock time),
    calling ``watch(t0)`` meanwhile; return each process's answer and what watch returned.
    ``beat``: each tick carries beat's shares, read by a process of their own (as the
    product's fan-out does; never with ``legacy``, which is discovery before them)."""
    beat = beat and not legacy
    context = multiprocessing.get_context("spawn")
    ready, results = context.Queue(), context.Queue()
    per = discovery_child.ENGINES_PER_PROCESS
    groups = [engine_ids[start : start + per] for start in range(0, len(engine_ids), per)]
    starts = [context.Queue() for _ in groups]
    shares: list[Any] = [context.Queue() if beat else None for _ in groups]
    url = database_url(connection.settings_dict)

    def plan(ids: list[str]) -> discovery_child.Plan:
        return discovery_child.Plan(
            url, ids, interval_ms, warmup_ticks, measured_ticks, legacy, beat=beat
        )

    processes = [
        context.Process(
            target=discovery_child.run_engines,
            args=(plan(group), ready, start, results, share),
            name=f"bench-engines-{n}",
        )
        for n, (group, start, share) in enumerate(zip(groups, starts, shares, strict=True))
    ]
    if beat:
        starts.append(context.Queue())
        processes.append(
            context.Process(
                target=discovery_child.run_beat,
                args=(plan(engine_ids), ready, starts[-1], results, shares),
                name="bench-beat",
            )
        )
    for process in processes:
        process.start()
    try:
        started = sum(_get(ready, processes, READY_TIMEOUT_S) for _ in processes)
        if started != len(engine_ids):
            raise RuntimeError(f"{started} of {len(engine_ids)} engines started")
        t0 = time.time() + 0.5
        for start in starts:
            start.put(t0)
        watched = watch(t0)
        gathered = [_get(results, processes, 120) for _ in processes]
    finally:
        for process in processes:
            process.join(60)
            if process.is_alive():
                process.kill()
    return gathered, watched
