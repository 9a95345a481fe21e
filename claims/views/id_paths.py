"""Ids in page paths: any workflow or engine id links to its own page and nowhere else.

Ids may hold "/", so a path route takes the rest of the path. A segment that is only
dots ("." or "..") is resolved away by every browser before the request leaves it
(``/workflows/../`` is ``/``, and ``%2E%2E`` counts as ".." too), so such a segment gets
one "~" in front on the way out and loses it on the way in: ``..`` is linked as ``~..``,
``~..`` as ``~~..``, and every other segment is left as it is. Everything else a path
must not carry raw ("?", "#", "%", "\\", spaces) is percent-escaped by ``reverse``.
"""

from __future__ import annotations

import re

from django.urls import register_converter
from django.urls.converters import get_converters

# A segment of one or two dots, after any tildes this escape put in front of it.
_DOTS = re.compile(r"~*\.{1,2}")


def escape_id(value: str) -> str:
    """The id as a path: every dots-only segment gets one more "~"."""
    return "/".join(
        f"~{segment}" if _DOTS.fullmatch(segment) else segment for segment in value.split("/")
    )


def unescape_id(path: str) -> str:
    """The id a path names: ``escape_id`` undone."""
    return "/".join(
        segment[1:] if segment.startswith("~") and _DOTS.fullmatch(segment) else segment
        for segment in path.split("/")
    )


class PageIdConverter:
    """The rest of the path, control characters included, so the page's own id rule
    answers a bad id with a 400 that says why instead of a bare 404."""

    regex = "(?s:.+)"

    def to_python(self, value: str) -> str:
        return unescape_id(value)

    def to_url(self, value: str) -> str:
        return escape_id(value)


if "pageid" not in get_converters():
    register_converter(PageIdConverter, "pageid")
