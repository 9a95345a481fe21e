"""The engine counters' statements (``ClaimCounter``: one row per engine and counter name)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from django.db import connection

from claims.models import ClaimCounter

from ._names import RowsStatement, column, dialect, table


@dataclass(frozen=True)
class CounterStatements:
    # Each (engine_id, name, value) row's total, kept at the larger of the stored and
    # the new value: a total never goes down, even if an older flush lands late.
    record: RowsStatement


@functools.cache
def _statements(vendor: str) -> CounterStatements:
    counters = table(ClaimCounter)
    engine, name, value = (column(ClaimCounter, f) for f in ("engine_id", "name", "value"))
    # The pair differs in one word: PostgreSQL's GREATEST and SQLite's two-argument MAX
    # are the same function.
    larger = dialect(vendor, postgresql="GREATEST", sqlite="MAX")
    return CounterStatements(
        record=RowsStatement(
            head=f"INSERT INTO {counters} ({engine}, {name}, {value}) VALUES ",
            row="(%s, %s, %s)",
            tail=(
                f" ON CONFLICT ({engine}, {name}) "
                f"DO UPDATE SET {value} = {larger}({counters}.{value}, excluded.{value})"
            ),
        ),
    )


def counter_statements(vendor: str | None = None) -> CounterStatements:
    """The statements for a database vendor, the default database's unless named."""
    return _statements(vendor or connection.vendor)
