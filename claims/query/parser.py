"""``parse``: query text to a checked Query, or one QueryError saying where and why."""

from __future__ import annotations

import unicodedata

from lark import Token, Tree
from lark.exceptions import UnexpectedInput, VisitError

from .build import build
from .errors import QueryError
from .grammar import parser
from .nodes import Query
from .syntax_errors import syntax_error

# Bounds that keep a hostile query cheap to refuse: the text, the nesting of AND, OR, NOT
# and parentheses, the terms, and the values of one IN list.
MAX_LENGTH = 2000
MAX_DEPTH = 32
MAX_TERMS = 100
MAX_IN_VALUES = 500
_WHITESPACE_CONTROLS = frozenset("\t\n\r")
_BOOLEAN_RULES = frozenset({"or_expr", "and_expr", "negation"})
_TERM_RULES = frozenset({"comparison", "in_list", "between", "match"})


def parse(text: str) -> Query:
    """The query ``text`` says; QueryError (with ``.position``) for anything else."""
    _check_text(text)
    try:
        tree = parser().parse(text)
    except UnexpectedInput as error:
        raise syntax_error(error, text) from None
    _check_size(tree)
    try:
        return build(tree)
    except VisitError as error:
        if isinstance(error.orig_exc, QueryError):
            raise error.orig_exc from None
        raise


def _check_text(text: str) -> None:
    if len(text) > MAX_LENGTH:
        raise QueryError(
            f"a query is at most {MAX_LENGTH} characters; this one has {len(text)}", MAX_LENGTH
        )
    for position, char in enumerate(text):
        if unicodedata.category(char) == "Cc" and char not in _WHITESPACE_CONTROLS:
            raise QueryError(_control_message(char), position)
    if not text.strip():
        raise QueryError("the query is empty: expected a field name, NOT or (", 0)


def _control_message(char: str) -> str:
    code = ord(char)
    if code == 0:
        return "control character U+0000 is not allowed"
    return f"control character U+{code:04X} is not allowed (write \\u{code:04x} inside quoted text)"


def _check_size(tree: Tree[Token]) -> None:
    """Refuse a tree too deep or too big before anything walks it recursively."""
    terms = 0
    stack: list[tuple[Tree[Token], int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        rule = str(node.data)
        if rule in _BOOLEAN_RULES:
            depth += 1
            if depth > MAX_DEPTH:
                raise QueryError(
                    f"the query nests AND, OR, NOT and parentheses deeper than {MAX_DEPTH}",
                    _start(node),
                )
        elif rule in _TERM_RULES:
            terms += 1
            if terms > MAX_TERMS:
                raise QueryError(f"a query has at most {MAX_TERMS} terms", _start(node))
            if rule == "in_list" and len(node.children) - 3 > MAX_IN_VALUES:
                raise QueryError(f"an IN list has at most {MAX_IN_VALUES} values", _start(node))
        # Reversed, so that nodes are popped in the order of the text they come from and
        # an error points at the first term over the limit.
        children = [child for child in node.children if isinstance(child, Tree)]
        stack.extend((child, depth) for child in reversed(children))


def _start(node: Tree[Token]) -> int:
    return getattr(node.meta, "start_pos", 0)
