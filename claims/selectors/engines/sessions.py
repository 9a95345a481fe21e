"""Each engine's session lease as the engine pages show it (the engine-lease mode): read
with the engine rows themselves, so a page of engines costs no query more."""

from __future__ import annotations

from typing import Any

from django.db.models import OuterRef, QuerySet, Subquery

from claims.models import Engine, EngineSession
from claims.protocol.sessions import SessionRow
from claims.store.sql.engine_sessions import SESSION_FIELDS

_PREFIX = "session_"


def with_sessions(engines: QuerySet[Engine]) -> QuerySet[Engine]:
    """The engines, each annotated with its session row's fields (all None without one:
    every engine of a workflow-lease fleet)."""
    row = EngineSession.objects.filter(engine_id=OuterRef("engine_id"))
    return engines.annotate(
        **{_PREFIX + name: Subquery(row.values(name)[:1]) for name in SESSION_FIELDS}
    )


def session_of(engine: Any) -> SessionRow | None:
    """The session row ``with_sessions`` read for this engine, or None."""
    values: list[Any] = [getattr(engine, _PREFIX + name, None) for name in SESSION_FIELDS]
    if values[0] is None:
        return None
    return SessionRow(engine.engine_id, *values)
