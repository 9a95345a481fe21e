"""The reads' refusals. Each is an InvalidInputError, so the pages answer it with 400 and
the API with 422 (claims/views/errors.py, weftboard/api.py) without naming it."""

from __future__ import annotations

from claims.protocol.errors import InvalidInputError


class BadCursorError(InvalidInputError):
    """A cursor that this sort did not write."""


class SearchTooBroadError(InvalidInputError):
    """A search that would read most ids: refused, or stopped at its time budget."""


class QueryTooSlowError(InvalidInputError):
    """A listing under a query that ran past the query budget: no index narrowed it."""
