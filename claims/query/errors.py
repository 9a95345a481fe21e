"""The one error a query can raise: what went wrong and where in the text."""

from __future__ import annotations

from claims.protocol.errors import InvalidInputError


class QueryError(InvalidInputError):
    """A query that cannot be read or does not mean anything.

    ``position`` is the 0-based offset in the query text the problem starts at (the end
    of the text for a query that stops too early); ``message`` says what is wrong in words
    an operator can act on, and ``str(error)`` adds the position. It is bad input like
    any other (InvalidInputError): the API answers 422 and a page says why.
    """

    def __init__(self, message: str, position: int) -> None:
        super().__init__(f"{message} (at position {position})")
        self.message = message
        self.position = position
