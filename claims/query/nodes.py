"""A parsed query: frozen dataclasses, compared by value, free of text positions.

Relative times stay relative (``RelativeTime``) so a saved query keeps meaning "the last
ten minutes"; they are resolved against a given ``now_ms`` only when a query is evaluated
or compiled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

CompareOp = Literal["=", "!=", "<", "<=", ">", ">="]
MatchOp = Literal["STARTS_WITH", "CONTAINS"]
COMPARE_OPS: tuple[CompareOp, ...] = ("=", "!=", "<", "<=", ">", ">=")
ORDERING_OPS: frozenset[str] = frozenset({"<", "<=", ">", ">="})
MATCH_OPS: tuple[MatchOp, ...] = ("STARTS_WITH", "CONTAINS")


@dataclass(frozen=True)
class RelativeTime:
    """``now``, ``now - 10m`` or ``now + 1h``: now plus ``offset_ms`` (negative: earlier)."""

    offset_ms: int = 0


@dataclass(frozen=True)
class AbsoluteTime:
    """An instant given as ISO 8601 UTC text, in milliseconds since 1970."""

    epoch_ms: int


Value: TypeAlias = str | int | RelativeTime | AbsoluteTime


@dataclass(frozen=True)
class Comparison:
    """``field op value``."""

    field: str
    op: CompareOp
    value: Value


@dataclass(frozen=True)
class InList:
    """``field IN (v, ...)``, or ``field NOT IN (v, ...)`` when ``negated``."""

    field: str
    values: tuple[Value, ...]
    negated: bool = False


@dataclass(frozen=True)
class Between:
    """``field BETWEEN low AND high``, both ends included."""

    field: str
    low: Value
    high: Value


@dataclass(frozen=True)
class Match:
    """``field STARTS_WITH "text"`` or ``field CONTAINS "text"`` (case-sensitive)."""

    field: str
    op: MatchOp
    text: str


@dataclass(frozen=True)
class And:
    """Every term holds; two terms or more."""

    terms: tuple[Query, ...]

    def __post_init__(self) -> None:
        _check_at_least_two(self.terms, "And")


@dataclass(frozen=True)
class Or:
    """Some term holds; two terms or more."""

    terms: tuple[Query, ...]

    def __post_init__(self) -> None:
        _check_at_least_two(self.terms, "Or")


@dataclass(frozen=True)
class Not:
    """The term does not hold."""

    term: Query


Term: TypeAlias = Comparison | InList | Between | Match
Query: TypeAlias = Term | And | Or | Not


def _check_at_least_two(terms: tuple[Query, ...], kind: str) -> None:
    # One term would print as itself and parse back as that term, not as the wrapper.
    if len(terms) < 2:
        raise ValueError(f"{kind} needs two terms or more, got {len(terms)}")
