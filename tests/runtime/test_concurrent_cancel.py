"""A cancel that lands while a checkpoint holds its fence: one waits for the other.

Real threads, real transactions. The fenced write holds the claim row (it locks
it first) and then writes the workflow row; the cancel must queue behind it,
never deadlock with it. The cancel, queued behind the held fence, must then depose the
drive: the drive's next fence waits for the cancel to finish, because SQLite's busy handler
is not a queue and could otherwise hand the write lock to that fence first (a fair serial
order, but not the one under test).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from django.db import connection

from claims.protocol import ClaimRegistry, ClaimTiming
from claims.protocol.testing import FakeClock
from claims.runtime import WorkflowDriver
from claims.services.workflows import workflow_cancel, workflow_start
from claims.store import OrmClaimStore

from .conftest import START_MS, ledger, workflow_row

T = TypeVar("T")
FENCE_HOLD_S = 0.5


class SlowFenceStore(OrmClaimStore):
    """Holds the checkpoint's fence open a while before the write, and says when it holds it.

    A ledger step takes two fences: its side effect's, then its checkpoint's; only the
    second (the first checkpoint of the drive) is held open. The third (step-2's side
    effect) starts only once the cancel has finished, so the cancel is the next writer.
    """

    def __init__(self) -> None:
        self.fence_held = threading.Event()
        self.cancel_done = threading.Event()
        self._fences = 0

    def fenced_write(self, workflow_id: str, epoch: int, fn: Callable[[], T]) -> T:
        self._fences += 1
        if self._fences == 3:
            assert self.cancel_done.wait(20), "the cancel never finished"
        if self._fences != 2:
            return super().fenced_write(workflow_id, epoch, fn)

        def slow() -> T:
            self.fence_held.set()
            wait_for_a_blocked_writer()
            return fn()

        return super().fenced_write(workflow_id, epoch, slow)


def wait_for_a_blocked_writer() -> None:
    """Hold the fence until the cancel queues behind it, so the order under test is the one run.

    On PostgreSQL the cancel shows in pg_stat_activity waiting on a lock; a fixed sleep let a
    loaded machine reach the drive's next fence before the cancel queued (a fair serial order,
    but not the one this test is about). SQLite's writer spins in its busy handler, which no
    view shows, so there the fence is held a fixed while.
    """
    if connection.vendor != "postgresql":
        time.sleep(FENCE_HOLD_S)
        return
    deadline = time.monotonic() + 20
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'"
            )
            if cursor.fetchone()[0]:
                return
            time.sleep(0.01)
    raise AssertionError("the cancel never queued behind the held fence")


def in_thread(target: Callable[[], Any], results: dict[str, Any], name: str) -> threading.Thread:
    def run() -> None:
        try:
            results[name] = target()
        except Exception as error:
            results[name] = error
        finally:
            connection.close()

    thread = threading.Thread(target=run, name=name)
    thread.start()
    return thread


@pytest.mark.django_db(transaction=True)
def test_cancel_during_a_checkpoint_waits_for_it_then_deposes_the_drive():
    clock = FakeClock(START_MS)
    wf = workflow_start(
        workflow_type="ledger", input={"steps": 2}, engine_id="a", clock=clock
    ).workflow_id
    store = SlowFenceStore()
    registry = ClaimRegistry(store, engine_id="a", clock=clock, timing=ClaimTiming())
    assert registry.adopt(wf, 1).status == "adopted"
    driver = WorkflowDriver(registry, clock=clock)
    results: dict[str, Any] = {}

    def cancel_while_fenced() -> str:
        try:
            assert store.fence_held.wait(10)
            time.sleep(FENCE_HOLD_S / 5)  # step-1's fence is held, its write not yet made
            return workflow_cancel(wf, clock=clock).status
        finally:
            store.cancel_done.set()

    threads = [
        in_thread(lambda: driver.drive(wf), results, "drive"),
        in_thread(cancel_while_fenced, results, "cancel"),
    ]
    for thread in threads:
        thread.join(30)

    row = workflow_row(wf)
    assert results == {"drive": "deposed", "cancel": "cancelled"}
    assert row.status == "cancelled"
    assert "result" not in row.state
    # step-1's checkpoint, held when the cancel came, committed first.
    assert list(row.state["steps"]) == ["step-1"]
    # step-2's side effect is fenced too: after the cancel it is refused, not run.
    assert ledger(wf) == {"step-1": [(1, "a")]}
