"""The ownership-mode marker: read by every engine, written once by the first."""

from __future__ import annotations

from django.db import connection

from claims.models import OwnershipModeMarker

from .sql.ownership_marker import ownership_marker_statements


class OwnershipMarkerQueries:
    def read_ownership_mode(self) -> tuple[str, int | None] | None:
        return (
            OwnershipModeMarker.objects.filter(id=1)
            .values_list("mode", "established_at_ms")
            .first()
        )

    def insert_ownership_mode(self, mode: str, established_at_ms: int) -> bool:
        """True if this call wrote the marker; False if one was already there."""
        with connection.cursor() as cursor:
            cursor.execute(ownership_marker_statements().establish, [1, mode, established_at_ms])
            return bool(cursor.rowcount == 1)
