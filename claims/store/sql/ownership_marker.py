"""The ownership-mode marker's statements (``OwnershipModeMarker``, a singleton row)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from django.db import connection

from claims.models import OwnershipModeMarker

from ._names import insert_unless_present

ESTABLISH_FIELDS = ("id", "mode", "established_at_ms")


@dataclass(frozen=True)
class OwnershipMarkerStatements:
    # The marker, unless one is already there (the first engine's word stands); the row
    # count says whether this one was written. Parameters: ESTABLISH_FIELDS.
    establish: str


@functools.cache
def _statements(vendor: str) -> OwnershipMarkerStatements:
    return OwnershipMarkerStatements(
        establish=insert_unless_present(OwnershipModeMarker, ESTABLISH_FIELDS)
    )


def ownership_marker_statements(vendor: str | None = None) -> OwnershipMarkerStatements:
    """The statements for a database vendor, the default database's unless named."""
    return _statements(vendor or connection.vendor)
