"""Running the suite on several workers (pytest-xdist): what each worker must not share,
and which tests run alone.

Loaded with ``-p tests.workers`` (pyproject's addopts), so it is imported before
pytest-django reads the settings. Each database gets a worker suffix from pytest-django
itself; the one thing left to share is Redis: the cache (and with it the per-user rate
counts) lives in CELERY_BROKER_URL's database, and tests clear it. So each worker moves
to a Redis database of its own.

Tests that start processes (engines, the main command, web servers, a private Redis) or
drive a browser run on the workers too: each has its own ports, folders, database and
Redis databases. Only the races between threads and processes (tests/concurrency) are
marked ``serial``: ``scripts/test`` runs them after the parallel part, one at a time, so
the interleavings they provoke are not those of a loaded machine.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

# Worker N uses Redis database FIRST_WORKER_DB + N for itself, and FIRST_SPARE_DB + N for
# the processes its tests start (the engines' broker, the web servers' shared cache): clear
# of 12 to 15, which the benchmarks and a run without workers use (the engines' broker, the
# throttle test, CI's configured database).
FIRST_WORKER_DB = 8
FIRST_SPARE_DB = 4
MAX_WORKERS = 4

# Folders and files (under tests/) whose every test is serial.
SERIAL_PATHS = ("concurrency",)


def _worker_number() -> int | None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(worker.removeprefix("gw")) if worker.startswith("gw") else None


def _own_redis_database(number: int) -> None:
    url = os.environ.get("CELERY_BROKER_URL", "").strip()
    if not url.startswith(("redis://", "rediss://")):
        return
    if number >= MAX_WORKERS:
        raise pytest.UsageError(
            f"at most {MAX_WORKERS} workers share one Redis (a database each); use -n {MAX_WORKERS}"
        )
    parts = urlsplit(url)
    own = urlunsplit((parts.scheme, parts.netloc, f"/{FIRST_WORKER_DB + number}", "", ""))
    os.environ["CELERY_BROKER_URL"] = own


def spare_redis_database(alone: int) -> int:
    """The Redis database for the processes a test starts: the worker's spare one, or
    ``alone`` in a run without workers. A worker runs one test at a time, so its tests may
    flush it."""
    number = _worker_number()
    return alone if number is None else FIRST_SPARE_DB + number


_number = _worker_number()
if _number is not None:
    _own_redis_database(_number)

_TESTS = Path(__file__).resolve().parent


def _serial(item: pytest.Item) -> bool:
    relative = Path(str(item.path)).resolve().relative_to(_TESTS)
    return relative.parts[0] in SERIAL_PATHS


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _serial(item):
            item.add_marker(pytest.mark.serial)
