"""The workflows' statements (``Workflow`` and its visibility index, ``WorkflowVisibility``)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from django.db import connection

from claims.models import Workflow, WorkflowVisibility

from ._names import RowsStatement, column, columns, table

# The values the visibility index copies from each workflow.
INDEXED_FIELDS = ("workflow_id", "status", "workflow_type", "updated_at_ms")


@dataclass(frozen=True)
class WorkflowStatements:
    # The backfill's missing index rows, copied from their workflows as the INSERT reads
    # them; an index row some other write inserted first is left alone. The row count
    # is the rows really inserted. One parameter per workflow_id.
    index_missing: RowsStatement


@functools.cache
def _statements(vendor: str) -> WorkflowStatements:
    # SQLite (>= 3.24) and PostgreSQL agree on these.
    index = table(WorkflowVisibility)
    index_columns = ", ".join(columns(WorkflowVisibility, INDEXED_FIELDS))
    workflow_columns = ", ".join(columns(Workflow, INDEXED_FIELDS))
    return WorkflowStatements(
        index_missing=RowsStatement(
            head=(
                f"INSERT INTO {index} ({index_columns}) "
                f"SELECT {workflow_columns} FROM {table(Workflow)} "
                f"WHERE {column(Workflow, 'workflow_id')} IN ("
            ),
            row="%s",
            tail=f") ON CONFLICT ({column(WorkflowVisibility, 'workflow_id')}) DO NOTHING",
        ),
    )


def workflow_statements(vendor: str | None = None) -> WorkflowStatements:
    """The statements for a database vendor, the default database's unless named."""
    return _statements(vendor or connection.vendor)
