"""``AnyOf(F(column), values)``: a column equal to one of a few hundred values.

Django writes ``column IN (%s, %s, ...)``, a placeholder per value: for a bulk job's
chunk of 250 that is 250 parameters to resolve in the ORM, to find in the query text in
psycopg, and to plan in PostgreSQL, in each of a chunk's statements. On PostgreSQL this
sends one array instead (``column = ANY(%s)``), so every chunk's statement is the same
text, planned once. SQLite has no arrays: ``IN`` as Django writes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import F, Lookup, Value
from django.db.models.sql.compiler import SQLCompiler


class AnyOf(Lookup):
    lookup_name = "any_of"
    prepare_rhs = False

    def __init__(self, lhs: F, values: Sequence[Any]) -> None:
        super().__init__(lhs, Value(list(values)))

    def as_sql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper) -> Any:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        values = self.rhs.value
        if connection.vendor == "postgresql":
            return f"{lhs} = ANY(%s)", (*lhs_params, values)
        if not values:
            return "1 = 0", tuple(lhs_params)
        return f"{lhs} IN ({', '.join(['%s'] * len(values))})", (*lhs_params, *values)
