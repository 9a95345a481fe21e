"""Database connections for the engine's pool threads: each task opens a usable one and
gives it back, so long-lived pools hold no idle sessions."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.db import close_old_connections


def closing_connections(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run fn with a usable database connection on this thread, and give it back after."""

    def run(*args: Any) -> Any:
        close_old_connections()
        try:
            return fn(*args)
        finally:
            close_old_connections()

    return run


class HealthyConnections:
    """Runs pass work on a long-lived pool, each task on a connection of its own that it
    gives back: RECLAIM_POOL_SIZE (16) idle sessions per engine would exhaust PostgreSQL's
    default of 100 connections with a handful of engines, and the set-based takeovers
    leave these pool tasks to the rare candidate that needs one compare-and-swap of its
    own."""

    def __init__(self, pool: ThreadPoolExecutor) -> None:
        self._pool = pool

    def map(self, fn: Callable[[str], str], items: list[str]) -> Iterator[str]:
        return self._pool.map(closing_connections(fn), items)
