"""The fleet snapshot's history, so the overview's charts survive a new browser tab."""

from __future__ import annotations

from django.db import models


class FleetSnapshotHistory(models.Model):
    """One fleet snapshot as the charts need it, keyed by when beat took it.

    Beat adds a row per renew interval and thins it (claims.services.fleet_history):
    the last hour at full resolution, then one row per minute for 24 hours. ``data`` stays
    small: fleet counter totals, claims by derived state, held claims per live engine,
    and the live engines' last pass durations (docs/design.md §7).
    """

    taken_at_ms = models.BigIntegerField(primary_key=True)
    data = models.JSONField(default=dict)

    def __str__(self) -> str:
        return f"fleet history at {self.taken_at_ms}"
