"""The engine's drive pool: a drive thread keeps its connection through a burst and gives it
back when the queue is empty; drives wait while a reclaim pass takes claims over, for at
most the gate's timeout (claims/engine/drive_pool.py)."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from claims.engine.drive_pool import DrivePool, DrivePoolClosed

pytestmark = pytest.mark.django_db(transaction=True)

WAIT_S = 10


def _open_at_start(seen: list[bool]):
    def drive(workflow_id: str) -> None:
        seen.append(connection.connection is not None)
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")

    return drive


def test_a_burst_reuses_one_connection_and_the_last_drive_gives_it_back():
    pool = DrivePool(1, gate_timeout_s=WAIT_S)
    release = threading.Event()
    seen: list[bool] = []
    try:
        blocking = threading.Event()

        def blocker(_: str) -> None:
            blocking.set()
            release.wait(WAIT_S)

        pool.submit(blocker, "blocker")
        assert blocking.wait(WAIT_S)
        burst = [pool.submit(_open_at_start(seen), f"wf-{n}") for n in range(4)]
        assert pool.queued() == 4
        release.set()
        for future in burst:
            future.result(WAIT_S)
        # The queue was empty after the burst: the next drive starts on a new connection.
        pool.submit(_open_at_start(seen), "after").result(WAIT_S)
    finally:
        release.set()
        pool.shutdown()
    assert seen == [False, True, True, True, False]


def test_drives_wait_while_a_reclaim_pass_takes_over():
    pool = DrivePool(2, gate_timeout_s=WAIT_S)
    driven = threading.Event()
    try:
        with pool.held_back():
            pool.submit(lambda _: driven.set(), "wf-1")
            assert not driven.wait(0.3)
        assert driven.wait(WAIT_S)
    finally:
        pool.shutdown()


def test_a_held_back_drive_goes_on_after_the_gate_timeout():
    """A reclaim pass that hangs (a stalled database) does not stop the drives for good."""
    pool = DrivePool(1, gate_timeout_s=0.2)
    driven = threading.Event()
    try:
        with pool.held_back():
            pool.submit(lambda _: driven.set(), "wf-1")
            assert driven.wait(WAIT_S)
    finally:
        pool.shutdown()


def test_the_gate_opens_only_when_every_pass_holding_it_is_done():
    pool = DrivePool(1, gate_timeout_s=WAIT_S)
    driven = threading.Event()
    try:
        with pool.held_back():
            with pool.held_back():
                pass
            pool.submit(lambda _: driven.set(), "wf-1")
            assert not driven.wait(0.3)
        assert driven.wait(WAIT_S)
    finally:
        pool.shutdown()


def test_a_drive_that_raises_still_gives_the_connection_back():
    pool = DrivePool(1, gate_timeout_s=WAIT_S)
    seen: list[bool] = []

    def failing(_: str) -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        raise RuntimeError("user code failed")

    try:
        with pytest.raises(RuntimeError, match="user code failed"):
            pool.submit(failing, "wf-1").result(WAIT_S)
        pool.submit(_open_at_start(seen), "wf-2").result(WAIT_S)
    finally:
        pool.shutdown()
    assert seen == [False]


def test_drives_wait_while_reclaim_is_behind_until_it_catches_up():
    pool = DrivePool(1, gate_timeout_s=WAIT_S)
    try:
        pool.behind(WAIT_S, at_most_s=WAIT_S)
        future = pool.submit(lambda _: None, "wf-1")
        assert not _done_within(future, 0.3)
        pool.caught_up()
        future.result(WAIT_S)
    finally:
        pool.shutdown()


def test_a_drive_held_back_by_a_reclaim_behind_goes_on_when_the_bound_passes():
    """A reclaim that stops passing (its engine's database gone) does not stop the drives."""
    pool = DrivePool(1, gate_timeout_s=WAIT_S)
    try:
        pool.behind(0.3, at_most_s=WAIT_S)
        pool.submit(lambda _: None, "wf-1").result(WAIT_S)
    finally:
        pool.shutdown()


def _done_within(future, seconds: float) -> bool:
    try:
        future.result(seconds)
    except TimeoutError:
        return False
    return True


def test_a_drive_held_back_waits_without_a_connection():
    """The thread kept its connection for the queued drive, but a wait holds none: twenty
    engines' pools waiting out a mass failover would hold a session per thread."""
    pool = DrivePool(1, gate_timeout_s=WAIT_S)
    release = threading.Event()
    seen: list[bool] = []

    blocking = threading.Event()

    def blocker(_: str) -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        blocking.set()
        release.wait(WAIT_S)

    try:
        first = pool.submit(blocker, "wf-1")
        assert blocking.wait(WAIT_S)
        with pool.held_back():
            queued = pool.submit(_open_at_start(seen), "wf-2")
            release.set()
            first.result(WAIT_S)
            _until(lambda: pool.waiting() == 1)
        queued.result(WAIT_S)
    finally:
        release.set()
        pool.shutdown()
    assert seen == [False]


def _until(condition) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_reclaim_behind_again_and_again_holds_the_drives_back_at_most_its_bound():
    """Work arriving faster than the fleet takes it keeps reclaim behind pass after pass;
    the drives still go after the bound from the first pass that fell behind."""
    pool = DrivePool(1, gate_timeout_s=WAIT_S)
    try:
        pool.behind(WAIT_S, at_most_s=0.5)
        future = pool.submit(lambda _: None, "wf-1")
        time.sleep(0.3)
        pool.behind(WAIT_S, at_most_s=0.5)  # behind again: extends, but not past the bound
        future.result(3)  # not the WAIT_S the second pass asked for
    finally:
        pool.shutdown()


def test_a_drive_waiting_on_reclaim_when_the_pool_shuts_down_is_not_run():
    """The engine is leaving: a drive held back is skipped (its claim is released with the
    rest), one not started is cancelled, and neither runs user code."""
    pool = DrivePool(1, gate_timeout_s=WAIT_S)
    ran: list[str] = []
    pool.behind(WAIT_S, at_most_s=WAIT_S)
    held = pool.submit(ran.append, "wf-1")
    _until(lambda: pool.waiting() == 1)
    queued = pool.submit(ran.append, "wf-2")

    pool.shutdown()

    assert ran == []
    assert queued.cancelled()
    with pytest.raises(DrivePoolClosed):
        held.result(WAIT_S)
    with pytest.raises(DrivePoolClosed):
        pool.submit(ran.append, "wf-3")


def test_an_idle_pool_starts_no_thread():
    pool = DrivePool(8, gate_timeout_s=WAIT_S)
    pool.shutdown()
    assert pool._threads == []
