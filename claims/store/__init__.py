"""The Django ORM claim store: the contract of ``claims.protocol.testing.MemoryClaimStore``
on the default database, PostgreSQL or SQLite alike.

``OrmClaimStore`` composes one query class per table: the claim rows one at a time
(``rows``) and many at a time (``claim_sets``), the workflows and their visibility index
(``workflows``), the ownerless marks discovery reads (``ownerless``), the reclaim
cursor (``reclaim_cursor``), the pending re-drives (``redrives``), the ownership-mode
marker (``ownership``) and, under the single-claim queries, the engine-lease mode's
session rows (``sessions``). Every hand-written statement they send is in ``sql``. Beside
them, ``time_limit`` bounds the statements of a block of code (a page's reads, the claims
search).
"""

from django.db import connection

from .claim_sets import ClaimSetQueries
from .ownerless import OwnerlessMarkQueries
from .ownership import OwnershipMarkerQueries
from .reclaim_cursor import ReclaimCursorQueries
from .redrives import RedriveQueries
from .rows import ClaimRowQueries, claim_row_from_values
from .session_claims import SessionClaimQueries
from .workflows import WorkflowQueries


class OrmClaimStore(
    ClaimRowQueries,
    ClaimSetQueries,
    SessionClaimQueries,
    WorkflowQueries,
    OwnerlessMarkQueries,
    ReclaimCursorQueries,
    RedriveQueries,
    OwnershipMarkerQueries,
):
    def close_thread_resources(self) -> None:
        connection.close()


__all__ = ["OrmClaimStore", "claim_row_from_values"]
