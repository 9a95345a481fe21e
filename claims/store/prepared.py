"""Cursors for the store's hot statements: prepared once per connection on PostgreSQL.

Django's PostgreSQL backend binds parameters on the client and turns psycopg's
prepared statements off (``prepare_threshold=None``), so each ORM statement is
parsed and planned again. The store sends a handful of fixed statements many
times, so it binds on the server and asks psycopg to prepare them. Each statement
still gets what Django's own cursors give: it runs on the thread's connection (so
it joins the caller's transaction), is refused after an error in an atomic block,
is logged whenever queries are (CaptureQueriesContext, DEBUG), is counted by
django-prometheus, and raises Django's database errors.

A deployment behind a pooler that cannot keep prepared statements (PgBouncer in
transaction mode before 1.21) sets ``OPTIONS["prepare_threshold"] = None`` on its
database; the store then leaves them off too.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Sequence
from typing import Any, Self

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.utils import CursorWrapper
from django.utils.asyncio import async_unsafe

# Above any real count, so psycopg never prepares other statements on its own: only the
# ones sent through a preparing cursor are.
_ONLY_WHEN_ASKED = 2**62

# One psycopg cursor per thread and connection, kept between calls: a new one costs
# about as much as binding and sending a statement.
_kept = threading.local()


def database() -> Any:
    """The default database's wrapper itself: cheaper to use than the ``connection`` proxy,
    which looks the wrapper up again on every attribute."""
    return connections[DEFAULT_DB_ALIAS]


def run(db: Any, sql: str, params: Sequence[Any]) -> int:
    """Execute one statement; return its row count."""
    if db.vendor != "postgresql":
        with db.cursor() as cursor:
            cursor.execute(sql, params)
            return int(cursor.rowcount)
    return int(_execute(db, sql, params).rowcount)


def fetch_one(db: Any, sql: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
    if db.vendor != "postgresql":
        with db.cursor() as cursor:
            cursor.execute(sql, params)
            row: tuple[Any, ...] | None = cursor.fetchone()
            return row
    cursor = _execute(db, sql, params)
    with db.wrap_database_errors:
        row = cursor.fetchone()
        return row


@async_unsafe
def _execute(db: Any, sql: str, params: Sequence[Any]) -> Any:
    """What ``db.cursor().execute(sql, params)`` does, on this thread's kept cursor."""
    db.close_if_health_check_failed()
    db.ensure_connection()
    pg = db.connection
    cursor = getattr(_kept, "cursor", None)
    if cursor is None or cursor.connection is not pg or cursor.closed:
        if pg.prepare_threshold is None and "prepare_threshold" not in db.settings_dict["OPTIONS"]:
            pg.prepare_threshold = _ONLY_WHEN_ASKED
        with db.wrap_database_errors:
            cursor = _kept.cursor = _cursor_class(db.alias)(pg)
    db.validate_thread_sharing()
    if db.queries_logged:
        _logged_cursor_class()(cursor, db).execute(sql, params)
    elif db.execute_wrappers:
        CursorWrapper(cursor, db).execute(sql, params)
    else:
        # CursorWrapper.execute without the wrapper objects, which cost as much again.
        db.validate_no_broken_transaction()
        with db.wrap_database_errors:
            cursor.execute(sql, params)
    return cursor


@functools.cache
def _cursor_class(alias: str) -> type[Any]:
    import psycopg
    from django_prometheus.db import errors_total, execute_total, query_duration_seconds
    from django_prometheus.db.common import DatabaseWrapperMixin

    class PreparingCursor(psycopg.Cursor[Any]):
        """Binds on the server and prepares every statement on its first use."""

        def execute(
            self,
            query: Any,
            params: Any = None,
            *,
            prepare: bool | None = None,
            binary: bool | None = None,
        ) -> Self:
            return super().execute(
                query, params, prepare=True if prepare is None else prepare, binary=binary
            )

    if not isinstance(connections[alias], DatabaseWrapperMixin):
        return PreparingCursor
    # The same series django-prometheus's cursors feed, with the label lookups done once.
    vendor = connections[alias].vendor
    executed = execute_total.labels(alias, vendor)
    duration = query_duration_seconds.labels(alias, vendor)

    class CountedCursor(PreparingCursor):
        def execute(
            self,
            query: Any,
            params: Any = None,
            *,
            prepare: bool | None = None,
            binary: bool | None = None,
        ) -> Self:
            executed.inc()
            started = time.perf_counter()
            try:
                return super().execute(query, params, prepare=prepare, binary=binary)
            except Exception as error:
                errors_total.labels(alias, vendor, type(error).__name__).inc()
                raise
            finally:
                duration.observe(time.perf_counter() - started)

    return CountedCursor


@functools.cache
def _logged_cursor_class() -> type[Any]:
    from django.db.backends.postgresql.base import CursorDebugWrapper
    from psycopg import errors

    class LoggedCursor(CursorDebugWrapper):
        def execute(self, sql: Any, params: Any = None) -> Any:
            # psycopg keeps no text of a prepared execution, so log the statement with its
            # values bound, as Django does for a connection that binds on the server.
            try:
                bound = self.db.ops.compose_sql(sql, params)
            except errors.DataError:
                bound = None
            with self.debug_sql(bound):
                return CursorWrapper.execute(self, sql, params)

    return LoggedCursor
