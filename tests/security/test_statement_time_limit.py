"""The time limit under the read limit and the search budget (claims.store.time_limit), on
both databases: a statement past it is stopped with an error that says so, a shared budget
counts every statement of its block, and the limit ends with its block."""

from __future__ import annotations

import time

import pytest
from django.db import DatabaseError, OperationalError, connection, transaction

from claims.store.time_limit import is_statement_timeout, statement_time_limit

pytestmark = pytest.mark.django_db


def slow_statement() -> str:
    """A statement of a few seconds when nothing stops it."""
    if connection.vendor == "postgresql":
        return "SELECT pg_sleep(3)"
    return (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10000000)"
        " SELECT count(*) FROM c"
    )


def run(sql: str) -> object:
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return cursor.fetchone()


def test_a_statement_past_its_limit_is_stopped_with_an_error_that_says_so():
    started = time.monotonic()
    with pytest.raises(OperationalError) as stopped, statement_time_limit(100, per_statement=True):
        run(slow_statement())

    assert is_statement_timeout(stopped.value)
    assert time.monotonic() - started < 1.5


def test_each_statement_has_the_whole_limit_when_it_is_per_statement():
    with statement_time_limit(300, per_statement=True):
        assert run("SELECT 1") == (1,)
        time.sleep(0.4)  # longer than the limit, between statements
        assert run("SELECT 2") == (2,)


def test_a_shared_budget_counts_every_statement_of_its_block():
    started = time.monotonic()
    budget = statement_time_limit(300, per_statement=False)
    with pytest.raises(OperationalError) as stopped, budget:  # noqa: PT012 (the block is the subject)
        assert run("SELECT 1") == (1,)
        time.sleep(0.2)
        run(slow_statement())  # has what is left, about 100 ms

    assert is_statement_timeout(stopped.value)
    assert time.monotonic() - started < 1.0


def test_a_spent_budget_stops_the_next_statement_before_it_runs():
    budget = statement_time_limit(50, per_statement=False)
    with pytest.raises(OperationalError) as stopped, budget:  # noqa: PT012 (the block is the subject)
        time.sleep(0.1)
        run("SELECT 1")

    assert is_statement_timeout(stopped.value)


def test_other_database_errors_are_not_taken_for_a_timeout():
    limit = statement_time_limit(1_000, per_statement=True)
    with pytest.raises(DatabaseError) as failed, limit, transaction.atomic():
        run("SELECT * FROM no_such_table")

    assert not is_statement_timeout(failed.value)


def test_a_stopped_statement_in_an_inner_limit_leaves_the_outer_transaction_usable():
    with statement_time_limit(5_000, per_statement=True):
        with pytest.raises(OperationalError), statement_time_limit(100, per_statement=False):
            run(slow_statement())
        assert run("SELECT 3") == (3,)


def test_the_setting_is_restored_as_each_limit_ends():
    if connection.vendor != "postgresql":
        pytest.skip("statement_timeout is PostgreSQL's")
    (before,) = run("SHOW statement_timeout")
    with statement_time_limit(5_000, per_statement=True):
        assert run("SHOW statement_timeout") == ("5s",)
        with statement_time_limit(800, per_statement=False):
            (inner,) = run("SHOW statement_timeout")
            assert inner.endswith("ms")
            assert int(inner.removesuffix("ms")) <= 800
        assert run("SHOW statement_timeout") == ("5s",)
    assert run("SHOW statement_timeout") == (before,)


def test_a_limited_read_runs_without_jit_and_the_setting_comes_back_after():
    """A short read pays no JIT compile: a preview at a million claims spent 170 ms of its
    420 compiling one."""
    if connection.vendor != "postgresql":
        pytest.skip("JIT is PostgreSQL's")
    with transaction.atomic():
        run("SELECT set_config('jit', 'on', true)")
        with statement_time_limit(5_000, per_statement=True):
            assert run("SHOW jit") == ("off",)
        assert run("SHOW jit") == ("on",)
    with statement_time_limit(5_000, per_statement=False):
        assert run("SHOW jit") == ("off",)
