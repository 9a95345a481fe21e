"""Engines by worker name: the filters that accept a name, and the labels shown beside ids.

Engine ids are new at every start; the Celery worker's node name (``engine1@host``) is
what an operator knows an engine by. Imports only models, so any selector can use it.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q

from claims.models import Engine


def engine_condition(field: str, value: str) -> Q:
    """Rows whose ``field`` names the engine ``value``: its id, or every engine id that has
    ``value`` as its exact worker name (a subquery, so still one query)."""
    named = Engine.objects.filter(name=value).values("engine_id")
    return Q(**{field: value}) | Q(**{f"{field}__in": named})


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
