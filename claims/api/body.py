"""Reading a request: a JSON body by the structure rule, bounded in size and in depth; a
query string whose parameters each appear once.

Python's JSON decoder recurses once per level, so a body nested a thousand levels deep
would fail with a RecursionError (or pass it on to whatever reads the value next). The
depth is measured first, without recursion, and a body deeper than
``claims.protocol.text.JSON_MAX_DEPTH`` is refused before it is decoded. The size limit is
Django's ``DATA_UPLOAD_MAX_MEMORY_SIZE``.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest
from django.utils.datastructures import MultiValueDict
from ninja.errors import HttpError
from ninja.parser import Parser

from claims.protocol.text import JSON_MAX_DEPTH

# A JSON string, escapes included: brackets inside one do not nest anything.
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(rb"[^\[\]{}]")
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def json_depth(body: bytes) -> int:
    """How deeply the arrays and objects of a JSON text nest (0 for a bare value)."""
    brackets = _NOT_BRACKET.sub(b"", _STRING.sub(b"", body))
    return max(accumulate(_STEP[byte] for byte in brackets), default=0)


class BodyRuleError(HttpError):
    """A body the structure rule refuses: answered with its own status, not ninja's 400."""


class JsonBodyParser(Parser):
    def parse_body(self, request: HttpRequest) -> Any:
        try:
            body = request.body
        except RequestDataTooBig as error:
            limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
            raise BodyRuleError(413, f"the request body must be at most {limit:,} bytes") from error
        # The body's own object is one level more than the input it carries.
        if json_depth(body) > JSON_MAX_DEPTH + 1:
            rule = f"JSON must not be nested more than {JSON_MAX_DEPTH} levels"
            raise BodyRuleError(422, f"{rule} below the body's own object")
        data = json.loads(body)
        # Every route's body is an object (or null, where it may be left out); ninja would
        # read fields off a list or a number as absent and accept it where every field is
        # optional.
        if data is not None and not isinstance(data, dict):
            raise BodyRuleError(422, "the request body must be a JSON object")
        return data

    def parse_querydict(
        self, data: MultiValueDict, list_fields: list[str], request: HttpRequest
    ) -> dict[str, Any]:
        # Ninja keeps the last of a repeated parameter that is not a list, so `?engine=a&
        # engine=b` would quietly mean engine=b; refuse it, as any other input the schema
        # does not describe.
        for key, values in data.lists():
            if key not in list_fields and len(values) > 1:
                raise HttpError(422, f"{key} is given {len(values)} times; give it once")
        return super().parse_querydict(data, list_fields, request)


def body_rule_refusal(error: HttpError) -> BodyRuleError | None:
    """The BodyRuleError behind ninja's "Cannot parse request body" (ninja wraps every
    exception of a parser in a 400 of its own), or None for any other HttpError."""
    cause = error.__cause__
    return cause if isinstance(cause, BodyRuleError) else None
