"""Which query parameters a page reads: a test-only middleware hands every view a
``request.GET`` that remembers the names asked for, so the fuzz can check that its table
names each of them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponseBase, QueryDict

MIDDLEWARE = "tests.security.page_fuzz.reads.RecordReads"


class RecordingQueryDict(QueryDict):
    """A QueryDict that notes every name looked up by name (``get``, ``[]``, ``getlist``,
    ``in``); a pass over all of it (a copy for a link, ``urlencode``) reads no name."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.names_read: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.names_read.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.names_read.add(key)
        return super().get(key, default)

    def getlist(self, key: str, default: Any = None) -> Any:
        self.names_read.add(key)
        return super().getlist(key, default)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.names_read.add(key)
        return super().__contains__(key)


def names_read(request: HttpRequest) -> set[str]:
    query = request.GET
    return set(query.names_read) if isinstance(query, RecordingQueryDict) else set()


class RecordReads:
    """First in the chain, so no view or middleware has read ``request.GET`` before."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        original = request.GET
        recording = RecordingQueryDict(mutable=True, encoding=original.encoding)
        for key, values in original.lists():
            recording.setlist(key, values)
        recording._mutable = False
        request.GET = recording  # type: ignore[assignment]  # the stubs' immutable type
        return self.get_response(request)
