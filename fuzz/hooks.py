"""What schemathesis cannot read from the OpenAPI schema: the API's own input rules.

"A request the schema allows is accepted" (schemathesis's ST202) holds only up to the
rules no JSON Schema states: no control characters in ids, filters and reasons
(claims.protocol.text: a pattern for Unicode's whole "C" category would be kilobytes per
field), a reason that is not blank, times within years 1 to 9999 in UTC, cursors the
server wrote, registered workflow types and their input bounds, epochs as true integers,
a search the id index can narrow, a query in the query language, a bulk job's count,
target and request key.
A 422 to a schema-valid request is dropped from the report only when one of these rules
explains it: its message names the rule and, for the character rules, the request really
holds such a character. Any other 422 to a valid request stays a failure, as it means
the schema promises what the server refuses.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import schemathesis

# The messages of the rules above (claims/protocol/*.py, claims/api, claims/services).
CHARACTER_RULES = re.compile(
    r"must not contain (control characters|NUL characters|unpaired surrogates)"
)
STATE_RULES = re.compile(
    "|".join(
        (
            r"a reason is required",
            r"must not be '\.\.?'",  # a workflow id made only of dots
            r"no workflow function is registered for type",
            r"^input\.",  # a workflow type's own input bounds
            r"is in the past",
            r"must be a time between 0001-01-01",
            r"cursor",  # a cursor is opaque: one the server did not write is refused
            r"must be earlier than",
            r"may appear only once",
            r"is not a live engine|is draining: undrain it first",  # a takeover's target
            r"must not be nested more than",
            # A search the id index cannot narrow (claims/selectors/claims/search.py), refused
            # by its shape or stopped at its time budget; the `q` parameter documents both.
            r"the index cannot narrow it|the limit on one search",
            # A query the language cannot read, or one that means nothing (claims/query):
            # every such refusal says where; and a query stopped at its time budget. The
            # `query` parameter documents both.
            r"\(at position \d+\)$|the limit on one query",
            # A bulk job (claims/services/bulk.py): a query that selects nothing or more
            # than one job may hold, a count above 100 without the previewed one, a target
            # engine for an action other than takeover, a CSV asked a page of.
            r"selects no workflows|the most one job may act on|confirmed with the count"
            r"|only a takeover names a target engine|takes no cursor or limit"
            # A request_key used before for another request (its description says so).
            r"|named bulk job #\d+, another request",
            # A saved query (claims/services/saved_queries.py): a name or a query that is
            # blank once trimmed, or a query longer than a list reads once written out.
            r"a saved query needs a (name|query)|more than the \d+ a list reads",
        )
    )
)
# Pydantic's message for 7.0 where an epoch must be the integer 7 (JSON Schema calls 7.0
# an integer; the API does not, so that a client's float arithmetic shows).
STRICT_INTEGER = "Input should be a valid integer"
REQUEST_LINE_MAX_BYTES = 4_094


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _sent_text(request: Any) -> Iterator[str]:
    """The path, the query and the body's strings, decoded as the server decodes them."""
    parts = urlsplit(request.url)
    yield unquote(parts.path)
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        yield name
        yield value
    body = request.body
    if body:
        try:
            yield from _strings(json.loads(body))
        except ValueError:
            yield body.decode(errors="replace") if isinstance(body, bytes) else str(body)


def _holds_a_control_character(request: Any) -> bool:
    return any(
        unicodedata.category(char).startswith("C") for text in _sent_text(request) for char in text
    )


def _explains(message: str, request: Any) -> bool:
    if CHARACTER_RULES.search(message):
        explained = _holds_a_control_character(request)
    else:
        explained = STATE_RULES.search(message) is not None
    if explained:
        _tally(message)
    return explained


def _tally(message: str) -> None:
    """One line per explained refusal, for the run's report (python -m fuzz counts them)."""
    path = os.environ.get("WEFTBOARD_FUZZ_EXPLAINED")
    if path:
        with open(path, "a", encoding="utf-8") as tally:
            tally.write(re.sub(r"'[^']*'|\d+", "…", message)[:120].replace("\n", " ") + "\n")


def _detail(response: Any) -> Any:
    try:
        return json.loads(response.content).get("detail")
    except (ValueError, AttributeError):
        return None


def _at(body: Any, loc: list[Any]) -> Any:
    """The value a validation error's ``loc`` (["body", "payload", ...]) points at."""
    for key in loc[2:]:
        try:
            body = body[key]
        except (KeyError, IndexError, TypeError):
            return None
    return body


def _error_explained(error: Any, request: Any) -> bool:
    message = str(error.get("msg", "")) if isinstance(error, dict) else ""
    if message.startswith("Value error, "):
        return _explains(message.removeprefix("Value error, "), request)
    if message == STRICT_INTEGER and error.get("loc", [None])[0] == "body":
        try:
            value = _at(json.loads(request.body), list(error["loc"]))
        except ValueError:
            return False
        if isinstance(value, float):
            _tally("an epoch is a JSON integer, not a float")
            return True
        return False
    return False


def refused_by_a_rule(response: Any) -> bool:
    """Whether a 422 is one of the API's documented rules at work on the request sent."""
    detail, request = _detail(response), response.request
    if isinstance(detail, str):
        return _explains(detail, request)
    if isinstance(detail, list) and detail:
        return all(_error_explained(error, request) for error in detail)
    return False


def _request_line_bytes(request: Any) -> int:
    return len(f"{request.method} {request.path_url} HTTP/1.1".encode())


@schemathesis.hook
def filter_failure(ctx: Any, failure: Any, case: Any, response: Any) -> bool:
    """Keep every failure but a valid request's 422 that a rule explains, and the web
    server's own 414 for a request line over its limit (gunicorn's 4,094 bytes; the
    request never reaches the API, and a proxy in front has a limit of its own)."""
    if response.status_code == 414:
        if _request_line_bytes(response.request) <= REQUEST_LINE_MAX_BYTES:
            return True
        _tally("a request line over the web server's limit (414)")
        return False
    if failure.code == "ST202" and response.status_code == 422:
        return not refused_by_a_rule(response)
    return True
