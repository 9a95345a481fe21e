"""Django, and a throwaway database made by Django's test-database machinery.

The benchmark never touches the configured database: it renames the test database
to one of its own (so it cannot collide with a concurrent test run either), creates
it with ``create_test_db(keepdb=False)``, and drops it with ``destroy_test_db``.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = ROOT / "var" / "bench"
DEFAULT_DB_NAME = "test_weftboard_bench"
# Two benchmark runs at once each need their own database: WEFTBOARD_BENCH_DB_NAME names it
# (and their results and charts are then kept apart under that name too).
BENCH_DB_NAME = os.environ.get("WEFTBOARD_BENCH_DB_NAME", "").strip() or DEFAULT_DB_NAME
SQLITE_TEST_FILE = BENCH_DIR / f"{BENCH_DB_NAME}.sqlite3"
POSTGRES_TEST_NAME = BENCH_DB_NAME
BATCH_SIZE = 5_000
# A collection before each timed run keeps one from landing inside it; the smoke run
# (benchmarks.smoke), which times nothing that matters, skips them.
COLLECT_GARBAGE = True


def configure_django() -> None:
    # The settings refuse to start without a key outside debug mode; a benchmark needs none.
    os.environ.setdefault("WEFTBOARD_SECRET_KEY", "insecure-benchmark-only-key")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "weftboard.settings")
    import django

    django.setup()


@contextmanager
def throwaway_database() -> Iterator[str]:
    """Create a fresh benchmark database, yield its name, and drop it afterwards."""
    from django.db import connection
    from django.test.utils import setup_test_environment, teardown_test_environment

    settings_dict = connection.settings_dict
    original_name = settings_dict["NAME"]
    test = settings_dict.setdefault("TEST", {})
    if connection.vendor == "sqlite":
        BENCH_DIR.mkdir(parents=True, exist_ok=True)
        test["NAME"] = str(SQLITE_TEST_FILE)
    elif connection.vendor == "postgresql":
        test["NAME"] = POSTGRES_TEST_NAME
    else:
        raise SystemExit(f"benchmarks: unsupported database vendor {connection.vendor!r}")
    setup_test_environment()
    name = connection.creation.create_test_db(
        verbosity=0, autoclobber=True, keepdb=False, serialize=False
    )
    if name == original_name or name not in (str(SQLITE_TEST_FILE), POSTGRES_TEST_NAME):
        raise SystemExit(f"benchmarks: refusing to run on database {name!r}")
    try:
        yield name
    finally:
        connection.creation.destroy_test_db(original_name, verbosity=0, keepdb=False)
        teardown_test_environment()
        if connection.vendor == "sqlite":
            for suffix in ("-wal", "-shm"):
                Path(f"{SQLITE_TEST_FILE}{suffix}").unlink(missing_ok=True)


def bulk_insert(model: type[Any], rows: Sequence[Any]) -> None:
    """bulk_create in batches, in one transaction."""
    from django.db import transaction

    with transaction.atomic():
        for start in range(0, len(rows), BATCH_SIZE):
            model.objects.bulk_create(rows[start : start + BATCH_SIZE], batch_size=BATCH_SIZE)


def delete_rows(model: type[Any], workflow_ids: Sequence[str] | None = None) -> None:
    """Raw DELETE: claim rows refuse ORM deletion, which is right everywhere but here."""
    from django.db import connection

    table = connection.ops.quote_name(model._meta.db_table)
    with connection.cursor() as cursor:
        if workflow_ids is None:
            cursor.execute(f"DELETE FROM {table}")
            return
        for start in range(0, len(workflow_ids), BATCH_SIZE):
            chunk = list(workflow_ids[start : start + BATCH_SIZE])
            marks = ", ".join(["%s"] * len(chunk))
            cursor.execute(f"DELETE FROM {table} WHERE workflow_id IN ({marks})", chunk)


def analyze() -> bool:
    """Refresh planner statistics on PostgreSQL, as autovacuum would within a minute, after
    the ownerless marks are judged again (``settle_marks``).

    SQLite is left as Django leaves it (no ANALYZE), which is what deployments get.
    """
    from django.db import connection

    settle_marks()
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return True


def settle_marks() -> int:
    """The ownerless marks as a fleet's own writes would have left them: a seed writes the
    index before the claims, so its triggers marked every running workflow it inserted."""
    from claims.store.ownerless import rebuild_marks

    return rebuild_marks()


def collect_garbage() -> None:
    if COLLECT_GARBAGE:
        gc.collect()


def timed_ms(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Run fn once after a garbage collection; return (elapsed ms, result)."""
    collect_garbage()
    started = time.perf_counter()
    result = fn()
    return (time.perf_counter() - started) * 1_000, result


def database_version() -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SHOW server_version")
            return f"PostgreSQL {cursor.fetchone()[0]}"
        cursor.execute("SELECT sqlite_version()")
        return f"SQLite {cursor.fetchone()[0]}"


def wal_lsn() -> int | None:
    """PostgreSQL's WAL insert position in bytes; None on SQLite."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn")
        return int(cursor.fetchone()[0])


def settle_writes() -> None:
    """On PostgreSQL, write the setup's dirty pages out now (CHECKPOINT), so the passes
    measured next do not share the disk with a checkpoint the loading set off."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("CHECKPOINT")
