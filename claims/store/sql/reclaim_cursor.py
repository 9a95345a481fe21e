"""The reclaim cursor's statements (``ReclaimCursor``, the scan's bookmark)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from django.db import connection

from claims.models import ReclaimCursor

from ._names import insert_unless_present

CREATE_FIELDS = ("name", "wraps", "scanned_total", "updated_at_ms", "updated_by")


@dataclass(frozen=True)
class ReclaimCursorStatements:
    # A cursor at the start of the table unless one of that name exists; the row
    # count says whether it was created. Parameters: CREATE_FIELDS.
    create: str


@functools.cache
def _statements(vendor: str) -> ReclaimCursorStatements:
    return ReclaimCursorStatements(create=insert_unless_present(ReclaimCursor, CREATE_FIELDS))


def reclaim_cursor_statements(vendor: str | None = None) -> ReclaimCursorStatements:
    """The statements for a database vendor, the default database's unless named."""
    return _statements(vendor or connection.vendor)
