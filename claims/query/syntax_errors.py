"""lark's parse errors said in an operator's words: where, what was expected, what was found."""

from __future__ import annotations

from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from .errors import QueryError

_VALUE_TERMINALS = frozenset({"STRING", "INT", "NOW"})
_OPERATOR_TERMINALS = frozenset(
    {"EQ", "NE", "LT", "LE", "GT", "GE", "IN", "BETWEEN", "STARTS_WITH", "CONTAINS"}
)
_NAMES = {
    "FIELD": "a field name",
    "DURATION": "a duration like 10m (units ms, s, m, h, d)",
    "SIGN": "+ or -",
    "_AND": "AND",
    "_OR": "OR",
    "NOT": "NOT",
    "IN": "IN",
    "_LPAR": "(",
    "_RPAR": ")",
    "_COMMA": ",",
    "$END": "the end of the query",
    "EQ": "=",
    "NE": "!=",
    "LT": "<",
    "LE": "<=",
    "GT": ">",
    "GE": ">=",
    "BETWEEN": "BETWEEN",
    "STARTS_WITH": "STARTS_WITH",
    "CONTAINS": "CONTAINS",
}
# Read in this order in a message: the likeliest fix first.
_ORDER = ("FIELD", "value", "operator", "DURATION", "SIGN", "_AND", "_OR", "NOT", "IN")


def syntax_error(error: UnexpectedInput, text: str) -> QueryError:
    """The QueryError for lark's ``error`` while parsing ``text``."""
    if isinstance(error, UnexpectedToken):
        return _unexpected_token(error, text)
    if isinstance(error, UnexpectedCharacters):
        return _unexpected_character(error)
    return QueryError(f"the query cannot be read: {error}", len(text))


def _unexpected_token(error: UnexpectedToken, text: str) -> QueryError:
    token = error.token
    expected = expected_text(error.accepts or error.expected)
    if token.type == "$END":
        return QueryError(f"the query ends too early: expected {expected}", len(text))
    found = _shorten(str(token))
    hint = ""
    if token.type == "FIELD" and _VALUE_TERMINALS & (error.accepts or error.expected):
        hint = f' (text values are double-quoted: "{found}")'
    position = token.start_pos if token.start_pos is not None else 0
    return QueryError(f"expected {expected}, found {found!r}{hint}", position)


def _unexpected_character(error: UnexpectedCharacters) -> QueryError:
    if error.char == '"':
        return QueryError(
            "this text never ends: close it with a double quote on the same line "
            '(write \\" for a quote inside it)',
            error.pos_in_stream or 0,
        )
    expected = expected_text(error.allowed or set())
    return QueryError(
        f"unexpected character {error.char!r}: expected {expected}", error.pos_in_stream or 0
    )


def expected_text(terminals: set[str] | frozenset[str]) -> str:
    """``a field name, NOT or (`` for the terminals lark would have accepted."""
    names = set(terminals)
    words: dict[str, str] = {}
    if names & _VALUE_TERMINALS:
        words["value"] = "a value (quoted text, a number or now)"
        names -= _VALUE_TERMINALS
    operators = names & _OPERATOR_TERMINALS
    if len(operators) > 2:
        words["operator"] = "an operator (= != < <= > >= IN NOT IN BETWEEN STARTS_WITH CONTAINS)"
        names -= operators | {"NOT"}
    for name in names:
        words[name] = _NAMES.get(name, name.strip("_").replace("_", " "))
    ordered = sorted(words, key=lambda key: (_ORDER.index(key) if key in _ORDER else 99, key))
    phrases = [words[key] for key in ordered]
    if not phrases:
        return "nothing more"
    return phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + " or " + phrases[-1]


def _shorten(found: str) -> str:
    return found if len(found) <= 30 else found[:27] + "..."
