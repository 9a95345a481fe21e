"""Engine sessions: the liveness of the engine-lease ownership mode (docs/design.md §12)."""

from __future__ import annotations

from typing import Any, NoReturn

from django.db import models
from django.db.models import Q

from .errors import SessionRowsAreKeptError
from .ids import ENGINE_ID_MAX_LENGTH


class EngineSessionQuerySet(models.QuerySet["EngineSession"]):
    def delete(self) -> NoReturn:
        raise SessionRowsAreKeptError("engine session rows are never deleted")


class EngineSession(models.Model):
    """One engine's session lease. The engine renews this row alone, one statement per
    renew interval, whatever it holds; its claims live exactly while the session does.
    A new session of the same engine moves ``epoch`` on, which ends every claim that
    names the old one. A closed session (by its engine at shutdown, or by the engine that
    took it over once it expired) is never renewed again."""

    engine_id = models.CharField(primary_key=True, max_length=ENGINE_ID_MAX_LENGTH)
    epoch = models.BigIntegerField()
    expires_at_ms = models.BigIntegerField()
    renewed_at_ms = models.BigIntegerField()
    started_at_ms = models.BigIntegerField()
    closed_at_ms = models.BigIntegerField(null=True, blank=True)
    closed_by = models.CharField(max_length=ENGINE_ID_MAX_LENGTH, blank=True, default="")

    objects = EngineSessionQuerySet.as_manager()

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(epoch__gte=1), name="engine_session_epoch_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.engine_id} session {self.epoch}"

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise SessionRowsAreKeptError("engine session rows are never deleted")
