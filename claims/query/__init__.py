"""weftboard's query language for claims and workflows, pure Python (see README.md).

``parse`` reads query text into frozen dataclasses, ``format_query`` writes the canonical
text back, and ``matches`` is the reference meaning any compiled form must reproduce.
"""

from __future__ import annotations

from .errors import QueryError
from .evaluate import matches
from .fields import FIELDS, STATES, WORKFLOW_STATUSES
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
    Term,
    Value,
)
from .parser import MAX_DEPTH, MAX_IN_VALUES, MAX_LENGTH, MAX_TERMS, parse
from .printer import format_query
from .times import resolve

__all__ = [
    "FIELDS",
    "MAX_DEPTH",
    "MAX_IN_VALUES",
    "MAX_LENGTH",
    "MAX_TERMS",
    "STATES",
    "WORKFLOW_STATUSES",
    "AbsoluteTime",
    "And",
    "Between",
    "Comparison",
    "InList",
    "Match",
    "Not",
    "Or",
    "Query",
    "QueryError",
    "RelativeTime",
    "Term",
    "Value",
    "format_query",
    "matches",
    "parse",
    "resolve",
]
