"""The SQL room: every hand-written SQL statement of the app, one module per table.

- ``claim_rows``: the claim rows (``WorkflowClaim``) and the event each transition logs;
- ``workflows``: the workflows and their visibility index (the backfill's repair);
- ``reclaim_cursor``: the reclaim scan's cursor;
- ``ownership_marker``: the ownership-mode marker;
- ``counters``: the engine counters;
- ``backfill_lease``: the backfill runner's PostgreSQL advisory lease (no table).

The pending re-drives have no hand-written statement: the ORM writes them
(``claims.store.redrives``).

The convention, in every module:

- A frozen dataclass ``<Table>Statements`` names each statement by what it does, with
  its positional ``%s`` parameters noted beside it; ``<table>_statements(vendor=None)``
  returns it for a database vendor (the default database's unless named), built on
  first use and then cached.
- Table and column names come from the models' ``_meta`` (``db_table``, a field's
  ``column``), quoted with ``connection.ops.quote_name`` (``_names.table``/``column``):
  nothing but identifiers is ever interpolated, and a renamed column cannot drift.
- Where PostgreSQL and SQLite need different text, the builder writes the pair side
  by side and picks with ``_names.dialect(vendor, postgresql=..., sqlite=...)``; where
  they agree, one text, said so in a comment.
- A statement whose text grows with the rows it carries (a VALUES or IN list) is a
  ``_names.RowsStatement``; ``.for_rows(n)`` gives the text for n rows.
- A statement in one dialect that names no table (the advisory lease) is a constant.

Callers run the statements; this package only writes them.
"""
