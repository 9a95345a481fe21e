"""Marks of workflows that may have become running with no holder: what the reclaim passes'
second discovery source reads instead of every running workflow (docs/design.md §4,
"Reclaim").

The database writes them itself, by triggers on the claims and visibility tables (migration
0027), in the transaction of the write that may have stranded the workflow:

- a claim row loses its holder (a release, a forced release, a shutdown's release of all,
  a finish) or a held claim row is deleted;
- a visibility row is inserted as running (a start, a backfill's insert);
- a visibility row becomes running (a resume, a backfill's fix).

So the marks cover every way the rule "running in the index, no holder" can become true,
written by weftboard or by anything else that writes these tables. Each trigger marks on
its own row's change alone, never on what it reads of the other table: of two writes
racing (a release and an index insert, each uncommitted), the one that commits last leaves
a mark, and no pass can judge that mark before both writes are visible. A mark says
"look", not "stranded": discovery judges each one against the rows and deletes the marks
that no longer need it (held, or not running), by id, so a mark written meanwhile for the
same workflow stays.
"""

from __future__ import annotations

from django.db import models

from .ids import WORKFLOW_ID_MAX_LENGTH

OWNERLESS_MARK_TABLE = "claims_ownerlessmark"


class OwnerlessMark(models.Model):
    # No unique constraint: a new mark for a workflow must survive the deletion of an
    # older one that discovery judged unneeded before the new write committed.
    workflow_id = models.CharField(max_length=WORKFLOW_ID_MAX_LENGTH)

    class Meta:
        db_table = OWNERLESS_MARK_TABLE

    def __str__(self) -> str:
        return f"{self.workflow_id} (mark {self.pk})"
