"""Running the suite on several workers (pytest-xdist): what each worker must not share,
and which tests run alone.

Loaded with ``-p tests.workers`` (pyproject's addopts), so it is imported before
pytest-django reads the settings. Each database gets a worker suffix from pytest-django
itself; the one thing left to share is Redis: the cache (and with it the per-user rate
counts) lives in CELERY_BROKER_URL's database, and tests clear it. So each worker moves
to a Redis database of its own.

Tests that start processes, drive a browser, race threads against a deadline or time a
benchmark are marked ``serial``: ``scripts/test`` runs them after the parallel part, one
at a time, on a machine nobody else is loading.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

# Worker N uses Redis database FIRST_WORKER_DB + N: clear of 13 to 15, which the serial
# tests use (the engines' broker, the throttle test, CI's configured database).
FIRST_WORKER_DB = 8
MAX_WORKERS = 5

# Folders and files (under tests/) whose every test is serial.
# (The fault harness's, the soak's and the broker's own checks share nothing: only their
# tests marked slow, which start processes, run alone.)
SERIAL_PATHS = (
    "integration",
    "browser",
    "concurrency",
    "test_benchmarks_smoke.py",
)


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


_number = _worker_number()
if _number is not None:
    _own_redis_database(_number)

_TESTS = Path(__file__).resolve().parent


def _serial(item: pytest.Item) -> bool:
    if item.get_closest_marker("slow") is not None:
        return True
    relative = Path(str(item.path)).resolve().relative_to(_TESTS)
    return relative.parts[0] in SERIAL_PATHS


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _serial(item):
            item.add_marker(pytest.mark.serial)
