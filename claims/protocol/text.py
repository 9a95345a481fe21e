"""What operator text and identifiers may hold: one rule, used by the pages, the API,
the admin and the services, so no interface can let through what another refuses.

Control characters corrupt logs, terminals and CSV files, and PostgreSQL refuses a NUL
byte outright (which would surface as a server error instead of a clear refusal).
"""

from __future__ import annotations

import unicodedata
from typing import Any

from .errors import InvalidInputError

REASON_MAX_LENGTH = 2_000
# A reason may run over several lines; nothing else of the control range is allowed.
REASON_LINE_BREAKS = frozenset({"\n", "\r", "\t"})


def _has_control(text: str, allowed: frozenset[str] = frozenset()) -> bool:
    return any(unicodedata.category(c).startswith("C") and c not in allowed for c in text)


def check_reason(value: object, *, required: bool = True) -> str:
    """An operator's reason, stripped: required (unless said otherwise), at most 2,000
    characters, no control characters but line breaks and tabs."""
    if not isinstance(value, str):
        raise InvalidInputError(f"a reason is text; got {type(value).__name__}")
    reason = value.strip()
    if required and not reason:
        raise InvalidInputError("a reason is required: it goes into the audit log with your name")
    if len(reason) > REASON_MAX_LENGTH:
        raise InvalidInputError(f"the reason must be at most {REASON_MAX_LENGTH} characters")
    if _has_control(reason, REASON_LINE_BREAKS):
        raise InvalidInputError("the reason must not contain control characters")
    return reason


def check_identifier(value: object, *, what: str, max_length: int) -> str:
    """An engine id, a cursor, a prefix or a filter value: text, bounded, no control
    characters."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} is text; got {type(value).__name__}")
    if len(value) > max_length:
        raise InvalidInputError(f"{what} must be at most {max_length} characters")
    if _has_control(value):
        raise InvalidInputError(f"{what} must not contain control characters")
    return value


# Deeper JSON is refused before it is stored: a reader that recurses (the JSON encoder,
# a template, a JavaScript client) fails near a thousand levels, and no workflow input
# needs more than a few.
JSON_MAX_DEPTH = 64


def check_json_text(value: Any, *, what: str, max_depth: int = JSON_MAX_DEPTH) -> Any:
    """JSON nested at most ``max_depth`` levels whose strings (keys included) hold no NUL
    and no lone surrogate (a "\\ud800" escape without its pair): PostgreSQL can store
    neither, nor can UTF-8 encode the latter. Walked without recursion, so any depth is
    answered with the rule rather than a RecursionError."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                raise InvalidInputError(f"{what} must not contain NUL characters")
            if any(unicodedata.category(c) == "Cs" for c in item):
                raise InvalidInputError(f"{what} must not contain unpaired surrogates")
        elif isinstance(item, dict | list | tuple):
            if depth > max_depth:
                raise InvalidInputError(
                    f"{what} must not be nested more than {max_depth} levels deep"
                )
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return value
