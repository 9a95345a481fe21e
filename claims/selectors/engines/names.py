"""Engines by worker name: the filters that accept a name, and the labels shown beside ids.

Engine ids are new at every start; the Celery worker's node name (``engine1@host``) is
what an operator knows an engine by. Imports only models, so any selector can use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import F, Lookup, Q
from django.db.models.sql.compiler import SQLCompiler

from claims.models import Engine


class _InArrayOf(Lookup):
    """``field = ANY(ARRAY(subquery))`` on PostgreSQL: the subquery runs once, before the
    scan, and its ids probe the field's index. ``field IN (subquery)`` beside another term
    of an OR is a "hashed SubPlan" the planner can only filter with, over every row (a
    sequential scan of a million claims to count one engine's). SQLite: ``IN``. Both say
    false, not unknown, for a null field, so that under a NOT (``NOT engine = "x"``) the
    rows with no engine are kept, as Django keeps them for its own lookups."""

    lookup_name = "in_array_of"

    def as_sql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper) -> Any:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"({lhs} = ANY(ARRAY{rhs}) AND {lhs} IS NOT NULL)", (
            *lhs_params,
            *rhs_params,
            *lhs_params,
        )

    def as_sqlite(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper) -> Any:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"({lhs} IN {rhs} AND {lhs} IS NOT NULL)", (*lhs_params, *rhs_params, *lhs_params)


def engine_condition(field: str, value: str) -> Q:
    """Rows whose ``field`` names the engine ``value``: its id, or every engine id that has
    ``value`` as its exact worker name (a subquery, so still one query)."""
    named = Engine.objects.filter(name=value).values("engine_id")
    return Q(**{field: value}) | Q(_InArrayOf(F(field), named))


@dataclass(frozen=True)
class EngineLabel:
    name: str
    pid: int


def engine_labels() -> dict[str, EngineLabel]:
    """Every engine's worker name and pid by id, for showing beside ids; one query (pruning
    keeps the table to the live fleet plus WEFTBOARD_ENGINE_HISTORY_DAYS of history)."""
    return {
        engine_id: EngineLabel(name, pid)
        for engine_id, name, pid in Engine.objects.values_list("engine_id", "name", "pid")
    }
