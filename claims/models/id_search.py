"""Every workflow id that has a claim row, for the claims list's substring search on
PostgreSQL (claims.selectors.claims.listing).

A substring of an id can only be found by reading every id, unless a trigram index
narrows it. The claim rows cannot carry that index: in the workflow-lease mode every
renewal rewrites each held row, and an update that changes an indexed column writes an
entry to every index of the table, so a trigram index there would be written at every
renewal of every claim. Claim rows are never deleted and their ids never change, so this
table is insert-only: a trigger on the claims table adds each new id once, and the GIN
trigram index over it is written once per workflow (docs/design.md §7).

Created on PostgreSQL only, by migration 0019; on SQLite the search reads the claim rows.
"""

from __future__ import annotations

from django.db import models

from .ids import WORKFLOW_ID_MAX_LENGTH

ID_SEARCH_TABLE = "claims_claimidsearch"


class ClaimIdSearch(models.Model):
    workflow_id = models.CharField(primary_key=True, max_length=WORKFLOW_ID_MAX_LENGTH)

    class Meta:
        managed = False  # PostgreSQL only, written by a trigger: migration 0019
        db_table = ID_SEARCH_TABLE

    def __str__(self) -> str:
        return self.workflow_id
