"""The reference meaning of a query over plain rows: what any compiled form must return.

A row is a mapping from names to plain values (a missing key reads as None):

- ``id``, ``type``, ``status``, ``failure``: text or None;
- ``epoch``: an int or None; ``expires``, ``claimed``, ``created``, ``updated``: milliseconds
  since 1970 or None;
- ``engine_id`` and ``engine_name``: the holder's engine id and its worker name (None or ""
  for none); ``engine`` matches either, and a row without ``engine_id`` has no engine;
- ``state``: the set of derived states the claim is in (``stranded`` and ``attention`` come
  on top of one of live, in-grace, expired, invalid, ownerless).

The one rule for absent values: every term on a field the row has no value for is false,
whatever its operator (``!=`` and ``NOT IN`` included); ``NOT`` is plain negation, so
``NOT expires > now`` holds for a row without ``expires``. A field with several values
(``engine``, ``state``) satisfies ``=``, ``IN``, an ordering, BETWEEN, STARTS_WITH and
CONTAINS when one of its values does, and ``!=`` and ``NOT IN`` when none of its values
equals any listed one.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

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
from .times import resolve

Scalar = str | int
_ORDERINGS: dict[str, Callable[[Scalar, Scalar], bool]] = {
    "<": lambda left, right: left < right,  # type: ignore[operator]
    "<=": lambda left, right: left <= right,  # type: ignore[operator]
    ">": lambda left, right: left > right,  # type: ignore[operator]
    ">=": lambda left, right: left >= right,  # type: ignore[operator]
}


def matches(query: Query, row: Mapping[str, object], now_ms: int) -> bool:
    """Whether ``row`` satisfies ``query``, relative times counted from ``now_ms``."""
    if isinstance(query, And):
        return all(matches(term, row, now_ms) for term in query.terms)
    if isinstance(query, Or):
        return any(matches(term, row, now_ms) for term in query.terms)
    if isinstance(query, Not):
        return not matches(query.term, row, now_ms)
    found = row_values(query.field, row)
    if not found:
        return False
    if isinstance(query, Comparison):
        wanted = plain(query.value, now_ms)
        if query.op == "=":
            return wanted in found
        if query.op == "!=":
            return wanted not in found
        compare = _ORDERINGS[query.op]
        return any(compare(value, wanted) for value in found)
    if isinstance(query, InList):
        listed = {plain(value, now_ms) for value in query.values}
        return listed.isdisjoint(found) if query.negated else not listed.isdisjoint(found)
    if isinstance(query, Between):
        low, high = plain(query.low, now_ms), plain(query.high, now_ms)
        return any(low <= value <= high for value in found)  # type: ignore[operator]
    return any(_text_matches(query, value) for value in found)


def row_values(field: str, row: Mapping[str, object]) -> list[Scalar]:
    """The values ``row`` has for ``field``: none, one, or several (engine, state)."""
    if field == "engine":
        engine_id, name = row.get("engine_id"), row.get("engine_name")
        if not isinstance(engine_id, str):
            return []
        return [engine_id, name] if isinstance(name, str) and name else [engine_id]
    value = row.get(field)
    if field == "state":
        return sorted(value) if isinstance(value, Collection) else []
    return [] if value is None else [value]  # type: ignore[list-item]


def plain(value: Value, now_ms: int) -> Scalar:
    """A query value as a row holds it: times in milliseconds since 1970."""
    if isinstance(value, RelativeTime | AbsoluteTime):
        return resolve(value, now_ms)
    return value


def _text_matches(term: Match, value: Scalar) -> bool:
    if not isinstance(value, str):
        return False
    return value.startswith(term.text) if term.op == "STARTS_WITH" else term.text in value
