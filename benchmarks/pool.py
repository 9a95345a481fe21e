"""The reclaim pass's thread pool as the engine keeps it: long-lived, connections warm."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from django.db import connection

from claims.protocol.passes import RECLAIM_POOL_SIZE


def on_every_thread(pool: ThreadPoolExecutor, fn: Callable[[], object]) -> None:
    """Run fn once on each of the pool's threads (a barrier keeps any thread from taking two)."""
    barrier = threading.Barrier(RECLAIM_POOL_SIZE)

    def task() -> None:
        fn()
        barrier.wait(timeout=60)

    for future in [pool.submit(task) for _ in range(RECLAIM_POOL_SIZE)]:
        future.result()


def _close_connection() -> None:
    connection.close()  # resolved on the calling thread: each thread has its own


def _warm_connection() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


@contextmanager
def reclaim_pool() -> Iterator[ThreadPoolExecutor]:
    """A pool of RECLAIM_POOL_SIZE threads with open connections, closed on exit."""
    pool = ThreadPoolExecutor(RECLAIM_POOL_SIZE, thread_name_prefix="bench-reclaim")
    try:
        on_every_thread(pool, _warm_connection)
        yield pool
    finally:
        on_every_thread(pool, _close_connection)
        pool.shutdown(wait=True)
