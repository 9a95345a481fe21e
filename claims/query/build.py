"""From lark's parse tree to the query's dataclasses, checking what each part means."""

from __future__ import annotations

import re
from typing import Any

from lark import Token, Transformer, Tree

from .errors import QueryError
from .fields import FieldSpec, RawValue, check_match, check_ordering, check_value, field_spec
from .nodes import (
    And,
    Between,
    CompareOp,
    Comparison,
    InList,
    Match,
    MatchOp,
    Not,
    Or,
    Query,
    RelativeTime,
)
from .nodes import Value as QueryValue
from .times import parse_offset

_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r"}


class _Located:
    """A value as written, with where it starts, until its field says what it means."""

    def __init__(self, raw: RawValue, position: int) -> None:
        self.raw = raw
        self.position = position


class QueryBuilder(Transformer[Token, Query]):
    """Turns the tree of one query into And, Or, Not and the four kinds of term."""

    def or_expr(self, terms: list[Query]) -> Query:
        return Or(tuple(terms))

    def and_expr(self, terms: list[Query]) -> Query:
        return And(tuple(terms))

    def negation(self, children: list[Any]) -> Query:
        return Not(children[1])

    def comparison(self, children: list[Any]) -> Query:
        field, op, value = children
        spec = field_spec(field.lower(), field.start_pos)
        check_ordering(spec, op.value, op.start_pos)
        op_text: CompareOp = op.value
        return Comparison(spec.name, op_text, check_value(spec, value.raw, value.position))

    def in_list(self, children: list[Any]) -> Query:
        field, negated, _keyword, *values = children
        spec = field_spec(field.lower(), field.start_pos)
        checked = tuple(check_value(spec, value.raw, value.position) for value in values)
        return InList(spec.name, checked, negated=negated is not None)

    def between(self, children: list[Any]) -> Query:
        field, keyword, low, high = children
        spec = field_spec(field.lower(), field.start_pos)
        check_ordering(spec, "BETWEEN", keyword.start_pos)
        return Between(spec.name, _checked(spec, low), _checked(spec, high))

    def match(self, children: list[Any]) -> Query:
        field, op, value = children
        spec = field_spec(field.lower(), field.start_pos)
        op_text: MatchOp = op.value.upper()
        check_match(spec, op_text, op.start_pos)
        if not isinstance(value.raw, str):
            raise QueryError(
                f'{op_text} takes quoted text, as in {spec.name} {op_text} "x"', value.position
            )
        return Match(spec.name, op_text, value.raw)

    def relative(self, children: list[Any]) -> _Located:
        now, sign, duration = children
        if sign is None:
            return _Located(RelativeTime(0), now.start_pos)
        try:
            return _Located(parse_offset(sign.value, duration.value), now.start_pos)
        except ValueError as error:
            raise QueryError(str(error), duration.start_pos) from None

    def STRING(self, token: Token) -> _Located:
        return _Located(unquote(token.value, start_of(token)), start_of(token))

    def INT(self, token: Token) -> _Located:
        return _Located(int(token.value), start_of(token))


def start_of(token: Token) -> int:
    """Where ``token`` starts in the query text (lark leaves it None only for made-up tokens)."""
    return token.start_pos or 0


def _checked(spec: FieldSpec, value: _Located) -> QueryValue:
    return check_value(spec, value.raw, value.position)


def unquote(literal: str, position: int) -> str:
    """The text of a double-quoted literal, its escapes replaced (\\" \\\\ \\n \\t \\r \\uXXXX)."""

    def replace(match: re.Match[str]) -> str:
        escape = match.group(1)
        if escape in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[escape]
        where = position + 1 + match.start()
        if len(escape) == 5:
            char = chr(int(escape[1:], 16))
            if char == "\x00":
                # No stored text holds it, and PostgreSQL refuses it in a parameter.
                raise QueryError("text cannot hold U+0000", where)
            if not 0xD800 <= ord(char) <= 0xDFFF:
                return char
        raise QueryError(
            f'unknown escape \\{escape[:5]} in text: use \\" \\\\ \\n \\t \\r or \\uXXXX', where
        )

    return _ESCAPE.sub(replace, literal[1:-1])


def build(tree: Tree[Token]) -> Query:
    """The query of a parse tree; QueryError for a field or value that means nothing."""
    return QueryBuilder(visit_tokens=True).transform(tree)
