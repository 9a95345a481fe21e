"""The Django ORM claim store: the contract of ``claims.protocol.testing.MemoryClaimStore``
on the default database, PostgreSQL or SQLite alike."""

from .grants import GrantQueries
from .passes import PassQueries
from .rows import ClaimRowStore, claim_row_from_values


class OrmClaimStore(ClaimRowStore, PassQueries, GrantQueries):
    pass


__all__ = ["OrmClaimStore", "claim_row_from_values"]
