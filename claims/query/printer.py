"""Canonical query text: ``parse(format_query(q)) == q`` for every query ``q``.

Keywords are upper case, one space around operators, parentheses only where the grammar
needs them (an AND or OR inside an AND, an OR inside an AND, any AND or OR under NOT).
"""

from __future__ import annotations

import unicodedata

from .nodes import (
    AbsoluteTime,
    And,
    Between,
    Comparison,
    InList,
    Match,
    Not,
    Or,
    Query,
    RelativeTime,
    Value,
)
from .times import format_instant, format_relative

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def format_query(query: Query) -> str:
    """The canonical text of ``query``."""
    if isinstance(query, And):
        return " AND ".join(_operand(term, inside=And) for term in query.terms)
    if isinstance(query, Or):
        return " OR ".join(_operand(term, inside=Or) for term in query.terms)
    if isinstance(query, Not):
        return f"NOT {_operand(query.term, inside=Not)}"
    return _format_term(query)


def _operand(term: Query, inside: type[And] | type[Or] | type[Not]) -> str:
    # AND binds tighter than OR, so only an AND directly under an OR goes bare; a term
    # of the same kind is bracketed so that it parses back as its own node.
    bare = not isinstance(term, And | Or) or (inside is Or and isinstance(term, And))
    text = format_query(term)
    return text if bare else f"({text})"


def _format_term(term: Comparison | InList | Between | Match) -> str:
    if isinstance(term, Comparison):
        return f"{term.field} {term.op} {format_value(term.value)}"
    if isinstance(term, InList):
        keyword = "NOT IN" if term.negated else "IN"
        values = ", ".join(format_value(value) for value in term.values)
        return f"{term.field} {keyword} ({values})"
    if isinstance(term, Between):
        return f"{term.field} BETWEEN {format_value(term.low)} AND {format_value(term.high)}"
    return f"{term.field} {term.op} {format_string(term.text)}"


def format_value(value: Value) -> str:
    """A value as query text: numbers bare, text and instants quoted, ``now - 10m``."""
    if isinstance(value, RelativeTime):
        return format_relative(value)
    if isinstance(value, AbsoluteTime):
        return format_string(format_instant(value))
    if isinstance(value, int):
        return str(value)
    return format_string(value)


def format_string(text: str) -> str:
    """``text`` double-quoted, with quotes, backslashes and control characters escaped."""
    return '"' + "".join(_escape(char) for char in text) + '"'


def _escape(char: str) -> str:
    if char in _ESCAPES:
        return _ESCAPES[char]
    # The parser refuses raw control characters, so they travel as \uXXXX.
    if unicodedata.category(char) == "Cc":
        return f"\\u{ord(char):04x}"
    return char
