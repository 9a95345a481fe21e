"""The query grammar (lark, LALR) and the parser built from it once."""

from __future__ import annotations

from functools import cache

from lark import Lark

GRAMMAR = r"""
?start: or_expr
?or_expr: and_expr (_OR and_expr)*
?and_expr: not_expr (_AND not_expr)*
?not_expr: NOT not_expr -> negation
         | atom
?atom: _LPAR or_expr _RPAR
     | comparison
     | in_list
     | between
     | match
comparison: FIELD (EQ | NE | LT | LE | GT | GE) value
in_list: FIELD [NOT] IN _LPAR value (_COMMA value)* _RPAR
between: FIELD BETWEEN value _AND value
match: FIELD (STARTS_WITH | CONTAINS) value
?value: STRING | INT | relative
relative: NOW [SIGN DURATION]

_OR: "or"i
_AND: "and"i
NOT: "not"i
IN: "in"i
BETWEEN: "between"i
STARTS_WITH: "starts_with"i
CONTAINS: "contains"i
NOW: "now"i
// A keyword is never a field name, so a misplaced one is reported as the keyword it is.
FIELD: /(?!(and|or|not|in|between|starts_with|contains|now)(?![a-z0-9_]))[a-z_][a-z0-9_]*/i
EQ: "="
NE: "!="
LT: "<"
LE: "<="
GT: ">"
GE: ">="
SIGN: "+" | "-"
DURATION: /[0-9]+(ms|s|m|h|d)/
INT: /[0-9]+/
STRING: /"(?:[^"\\\r\n]|\\.)*"/
_LPAR: "("
_RPAR: ")"
_COMMA: ","
%ignore /[ \t\r\n]+/
"""


@cache
def parser() -> Lark:
    """The LALR parser, built on first use (a few milliseconds) and kept."""
    return Lark(GRAMMAR, parser="lalr", propagate_positions=True, maybe_placeholders=True)
