"""The links the pages write, followed as a browser would: a plain GET for an ``href``, an
HTMX request naming its target for an ``hx-get``. A page must take back everything it
links to, whatever the rows it was drawn from hold."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlsplit

from django.http import HttpResponse, HttpResponseBase, StreamingHttpResponse
from django.test import Client
from django.urls import Resolver404, resolve

# Where the crawl starts: every list, filtered to the rows another program wrote too.
START = (
    "/",
    "/claims/?state=all",
    "/claims/?state=all&prefix=import-&sort=-expires_at",
    "/workflows/",
    "/workflows/?type=imported&sort=created",
    "/engines/",
    "/redrives/",
    "/backfills/",
    "/audit/",
    "/audit/?prefix=import-",
    "/reclaim/",
)


@dataclass(frozen=True)
class Link:
    url: str
    target: str | None  # the hx-target of an hx-get: the request is an HTMX one

    def headers(self) -> dict[str, Any]:
        if self.target is None:
            return {}
        return {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": self.target.lstrip("#")}


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[Link] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if href := values.get("href"):
            self.found.append(Link(href, None))
        if hx_get := values.get("hx-get"):
            self.found.append(Link(hx_get, values.get("hx-target") or ""))


def links_of(html: str) -> list[Link]:
    parser = _Links()
    parser.feed(html)
    return parser.found


def page_route(url: str) -> str | None:
    """The page a local URL names, or None (another site, a static file, the admin)."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or not parts.path.startswith("/"):
        return None
    try:
        match = resolve(parts.path)
    except Resolver404:
        return None
    return match.view_name


def body_of(response: HttpResponseBase) -> bytes:
    """The whole body: a streamed one (the audit CSV) fails while it is read, if at all."""
    if isinstance(response, StreamingHttpResponse):
        return b"".join(response.streaming_content)  # type: ignore[arg-type]
    assert isinstance(response, HttpResponse)
    return response.content


def crawl(
    client: Client, routes: set[str], *, per_route: int = 12, fan_out: int = 8
) -> Iterator[tuple[Link, int, str]]:
    """Each link reached from START, with the status it answered and its body: at most
    ``fan_out`` new links of each page and ``per_route`` of each route, picked at random
    with a fixed seed, so the crawl spreads over every page in a few seconds."""
    rng = random.Random(23)
    followed: Counter[str] = Counter()
    seen: set[Link] = set()
    queue = [Link(url, None) for url in START]
    while queue:
        link = queue.pop(0)
        name = page_route(link.url)
        if link in seen or name not in routes or followed[name] >= per_route:
            continue
        seen.add(link)
        followed[name] += 1
        response = client.get(link.url, **link.headers())
        body = body_of(response)
        text = body.decode(errors="replace")
        yield link, response.status_code, text
        found = links_of(text) if "html" in response.get("Content-Type", "") else []
        fresh = sorted({found_link for found_link in found if found_link not in seen}, key=str)
        rng.shuffle(fresh)
        queue.extend(fresh[:fan_out])
