"""Time limits on the database statements of a block of code: each read a page or the API
serves (per statement, weftboard.read_time_limit), and the claims search (one budget for all
of its statements, claims.selectors.claims.search). docs/design.md §7.

PostgreSQL: the block runs in a transaction (a savepoint of its own inside one already
open) under ``SET LOCAL statement_timeout``, so the limit ends with the block. A
session-level SET would outlive it, and behind PgBouncer in transaction mode it would
reach whichever client gets that server connection next (an engine, a migration). The
server cancels a statement past the limit (QueryCanceled, SQLSTATE 57014). For a budget
shared by several statements, each statement is given what is left of it.

SQLite: a progress handler on the connection interrupts a statement past the limit
(SQLITE_INTERRUPT). No transaction: the embedded database takes its write lock at BEGIN
(transaction mode IMMEDIATE), and a read needs none.

Either way the statement fails with an OperationalError that ``is_statement_timeout``
recognises, and nothing is written. Engines, beat and migrations never enter a limit, so
their own connection settings (claims.engine.worker.limit_idle_transactions) stay theirs.
The limit's own statements (savepoint, SET) go straight to the driver: they are not
reads, and a page's query count stays what its reads cost.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from django.db import DEFAULT_DB_ALIAS, OperationalError, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

# PostgreSQL's code for a statement cancelled by statement_timeout (or by an operator).
QUERY_CANCELED = "57014"
# SQLite calls the handler every this many virtual-machine instructions (microseconds of
# work each time), so a statement stops within about that much of its limit.
SQLITE_PROGRESS_STEPS = 1_000
# Savepoints may share a name: ROLLBACK TO and RELEASE take the innermost one.
_SAVEPOINT = "weftboard_time_limit"


class TimeLimitExceededError(OperationalError):
    """A shared budget ran out before the block's next statement began."""


@dataclass
class _Limit:
    ms: int
    per_statement: bool  # else one budget for every statement of the block
    started: float = field(default_factory=time.monotonic)

    def statement_starts(self) -> None:
        if self.per_statement:
            self.started = time.monotonic()

    def remaining_ms(self) -> int:
        return self.ms - int((time.monotonic() - self.started) * 1_000)


# The limits open in this thread, innermost last: SQLite's progress handler checks them all.
_open: ContextVar[tuple[_Limit, ...]] = ContextVar("weftboard_time_limits", default=())
# Limits that open lazily, at their block's first statement (a request's read limit), and
# must open before any limit inside them does: else the inner limit's savepoint would
# enclose the outer one's, and each end would restore the other's setting.
_waiting: ContextVar[tuple[Callable[[], object], ...]] = ContextVar(
    "weftboard_waiting_time_limits", default=()
)


@contextmanager
def opens_first(open_now: Callable[[], object]) -> Iterator[None]:
    """While the block runs, call ``open_now`` before any time limit opens inside it."""
    token = _waiting.set((*_waiting.get(), open_now))
    try:
        yield
    finally:
        _waiting.reset(token)


def is_statement_timeout(error: BaseException) -> bool:
    """Whether ``error`` is a statement stopped by a time limit (on either database)."""
    for found in (error, error.__cause__):
        if isinstance(found, TimeLimitExceededError):
            return True
        if getattr(found, "sqlstate", None) == QUERY_CANCELED:
            return True
        code = getattr(found, "sqlite_errorcode", None)
        if isinstance(found, sqlite3.OperationalError) and code == sqlite3.SQLITE_INTERRUPT:
            return True
    return False


@contextmanager
def statement_time_limit(
    ms: int, *, per_statement: bool, using: str = DEFAULT_DB_ALIAS
) -> Iterator[None]:
    """Stop each statement the block runs on ``using`` after ``ms`` (``per_statement``),
    or all of them together once ``ms`` have passed since the block began. A statement
    stopped raises an OperationalError (``is_statement_timeout``); on PostgreSQL the
    block's transaction or savepoint is then rolled back, so the caller's carries on."""
    connection = connections[using]
    for open_now in _waiting.get():
        open_now()
    limit = _Limit(ms, per_statement)
    token = _open.set((*_open.get(), limit))
    try:
        if connection.vendor == "postgresql":
            with _postgresql(connection, limit):
                yield
        elif connection.vendor == "sqlite":
            with _sqlite(connection, limit):
                yield
        else:
            yield
    finally:
        _open.reset(token)


def _run(connection: BaseDatabaseWrapper, sql: str, params: list[Any] | None = None) -> Any:
    return connection.connection.execute(sql, params)


def set_statement_timeout(connection: BaseDatabaseWrapper, ms: int) -> None:
    """PostgreSQL, inside a transaction: its statements stop after ``ms`` until it ends."""
    _run(connection, "SELECT set_config('statement_timeout', %s, true)", [str(max(ms, 1))])


def _jit_off(connection: BaseDatabaseWrapper) -> None:
    """PostgreSQL, inside a transaction: no JIT compilation until it ends. A read under a
    time limit is short by design, and the planner's cost estimate (too high for an index
    probe of a runtime array, say) can start a JIT compile of 150-250 ms for a statement
    that runs in 100: measured on a bulk preview at 1,000,000 claims."""
    _run(connection, "SELECT set_config('jit', 'off', true)")


def _failed(connection: BaseDatabaseWrapper) -> bool:
    """Whether the open transaction is aborted (a statement failed and the error was
    answered by the code inside, e.g. the API's 503)."""
    from psycopg.pq import TransactionStatus

    return bool(connection.connection.info.transaction_status == TransactionStatus.INERROR)


@contextmanager
def _postgresql(connection: BaseDatabaseWrapper, limit: _Limit) -> Iterator[None]:
    if not connection.in_atomic_block:
        with transaction.atomic(using=connection.alias):
            set_statement_timeout(connection, limit.ms)
            _jit_off(connection)
            with _shared_budget(connection, limit):
                yield
            if _failed(connection):
                transaction.set_rollback(True, using=connection.alias)
        return
    previous, previous_jit = _run(
        connection, "SELECT current_setting('statement_timeout'), current_setting('jit')"
    ).fetchone()
    _run(connection, f"SAVEPOINT {_SAVEPOINT}")
    try:
        set_statement_timeout(connection, limit.ms)
        _jit_off(connection)
        with _shared_budget(connection, limit):
            yield
    except BaseException:
        _undo_savepoint(connection)
        raise
    if _failed(connection):
        _undo_savepoint(connection)  # which also restores the setting
    else:
        _run(connection, f"RELEASE SAVEPOINT {_SAVEPOINT}")
        _run(connection, "SELECT set_config('statement_timeout', %s, true)", [previous])
        _run(connection, "SELECT set_config('jit', %s, true)", [previous_jit])


def _undo_savepoint(connection: BaseDatabaseWrapper) -> None:
    try:
        _run(connection, f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}")
        _run(connection, f"RELEASE SAVEPOINT {_SAVEPOINT}")
    except Exception:  # the connection is gone: the error in flight says so
        pass


@contextmanager
def _shared_budget(connection: BaseDatabaseWrapper, limit: _Limit) -> Iterator[None]:
    """PostgreSQL: with one budget for the block, each statement gets what is left."""
    if limit.per_statement:
        yield
        return

    def give_what_is_left(execute: Callable[..., Any], *args: Any) -> Any:
        left = _left_or_raise(limit)
        set_statement_timeout(connection, left)
        return execute(*args)

    with connection.execute_wrapper(give_what_is_left):
        yield


def _left_or_raise(limit: _Limit) -> int:
    left = limit.remaining_ms()
    if left <= 0:
        raise TimeLimitExceededError(f"the time limit of {limit.ms} ms ran out")
    return left


def _past_a_limit() -> int:
    """SQLite's progress handler: non-zero interrupts the running statement."""
    return int(any(limit.remaining_ms() <= 0 for limit in _open.get()))


@contextmanager
def _sqlite(connection: BaseDatabaseWrapper, limit: _Limit) -> Iterator[None]:
    def watch(execute: Callable[..., Any], *args: Any) -> Any:
        # Set per statement: the connection may open inside the block.
        connection.connection.set_progress_handler(_past_a_limit, SQLITE_PROGRESS_STEPS)
        limit.statement_starts()
        _left_or_raise(limit)
        return execute(*args)

    try:
        with connection.execute_wrapper(watch):
            yield
    finally:
        outer_limits = _open.get()[:-1]
        if not outer_limits and connection.connection is not None:
            connection.connection.set_progress_handler(None, 0)


@contextmanager
def refused_past(
    ms: int, refusal: Callable[[], Exception], *, using: str = DEFAULT_DB_ALIAS
) -> Iterator[None]:
    """One budget of ``ms`` for all the block's statements (0 or less: none of its own);
    a statement stopped by it raises ``refusal()`` (which says why, and logs) instead of
    the database's timeout. The searches' and the queries' budgets."""
    if ms <= 0:
        yield
        return
    try:
        with statement_time_limit(ms, per_statement=False, using=using):
            yield
    except OperationalError as error:
        if not is_statement_timeout(error):
            raise
        raise refusal() from error
