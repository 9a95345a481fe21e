"""One fuzzed page request: a URL built from the fuzz table, the HTMX headers a page's own
scripts send (or spoiled ones), and who asks (an operator with every permission, a
viewer with none, or nobody signed in)."""

from __future__ import annotations

from dataclasses import dataclass

from django.urls import NoReverseMatch, reverse
from hypothesis import strategies as st

from claims.views.id_paths import escape_id

from .routes import Route
from .scene import Scene
from .values import TEXT, Raw, Value, hostile, url_text, with_hostile

WHO = ("operator", "operator", "viewer", "anonymous")
# What reverse() leaves unescaped in a path (django.urls.resolvers).
PATH_SAFE = "!$&'()*+,;=/~:@"
PLACEHOLDER = "PLACEHOLDER"
NUMBER_PLACEHOLDER = 987654321987


@dataclass(frozen=True)
class PageRequest:
    url: str
    headers: tuple[tuple[str, str], ...]
    who: str
    cookies: str = ""  # sent after the client's own, so a name here replaces its value
    read_only: bool = False  # with every operator write switched off (WEFTBOARD_READ_ONLY)

    def __repr__(self) -> str:
        """What a failure names: the URL cut short when it is long."""
        url = self.url if len(self.url) <= 600 else f"{self.url[:600]}... ({len(self.url)} chars)"
        cookies = f" cookies={self.cookies[:300]!r}" if self.cookies else ""
        mode = " in read-only mode" if self.read_only else ""
        return f"GET {url!r} headers={dict(self.headers)!r} as {self.who}{cookies}{mode}"


def page_requests(route: Route, scene: Scene) -> st.SearchStrategy[PageRequest]:
    return st.builds(
        _request,
        _path(route, scene),
        _query(route, scene),
        _headers(route),
        st.sampled_from(WHO),
        st.one_of(st.just(""), st.just(""), _cookies()),
    )


def _request(path: str, query: str, headers: dict[str, str], who: str, cookies: str) -> PageRequest:
    url = path + (f"?{query}" if query else "")
    return PageRequest(url, tuple(headers.items()), who, cookies)


def _path(route: Route, scene: Scene) -> st.SearchStrategy[str]:
    if route.path_id is None:
        return st.just(reverse(route.name))
    try:
        prefix, suffix = reverse(route.name, args=[PLACEHOLDER]).split(PLACEHOLDER)
    except NoReverseMatch:  # a number in the path (<int:...>): split around one
        prefix, suffix = reverse(route.name, args=[NUMBER_PLACEHOLDER]).split(
            str(NUMBER_PLACEHOLDER)
        )
    ids = with_hostile(route.path_id(scene))
    # As the pages link it (dot segments escaped), as a person might type it, or raw.
    segment = st.one_of(
        ids.map(lambda value: _id_path(value, escape=True)),
        ids.map(lambda value: _id_path(value, escape=False)),
    )
    return segment.map(lambda text: f"{prefix}{text}{suffix}")


def _id_path(value: Value, *, escape: bool) -> str:
    if isinstance(value, Raw):
        return value.text
    return url_text(escape_id(value) if escape else value, safe=PATH_SAFE)


def _query(route: Route, scene: Scene) -> st.SearchStrategy[str]:
    named = [
        st.tuples(st.just(param.name), with_hostile(param.valid(scene))) for param in route.params
    ]
    stray_name: st.SearchStrategy[Value] = st.one_of(
        st.sampled_from(["", "x", "cursor[]", "state ", "STATE", "a" * 300]), hostile()
    )
    stray = st.tuples(stray_name, hostile())
    pair = st.one_of(*named, *named, stray) if named else stray
    pairs = st.lists(pair, max_size=6)
    # The same parameter twice or more, with differing values.
    repeated = st.lists(pair, min_size=1, max_size=2).flatmap(
        lambda found: st.integers(2, 5).map(lambda times: found * times)
    )
    bare = st.sampled_from(["", "&", "&&", "=", "==", "?", "a&b", "%zz=1"]).map(Raw)
    return st.one_of(
        pairs.map(_encoded),
        repeated.map(_encoded),
        st.tuples(pairs, bare).map(lambda both: "&".join([_encoded(both[0]), both[1].text])),
    )


def _encoded(pairs: list[tuple[Value, Value]]) -> str:
    return "&".join(f"{url_text(name)}={url_text(value)}" for name, value in pairs)


_HEADER_TEXT = st.one_of(
    st.sampled_from(
        [
            "http://[",
            "//evil.example/",
            "javascript:alert(1)",
            "http://testserver/..%2f..",
            "http://testserver/claims/?q=%00",
            "%ZZ",
            "",
            " ",
        ]
    ),
    # What reaches a WSGI application as a header: Latin-1 text.
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=40),
    st.sampled_from([text for text in TEXT if text.isprintable() and text.isascii()]),
)


def _headers(route: Route) -> st.SearchStrategy[dict[str, str]]:
    htmx = {"HTTP_HX_REQUEST": "true"}
    targets = st.sampled_from(route.fragments) if route.fragments else _HEADER_TEXT
    return st.one_of(
        st.just({}),
        st.just(htmx),
        st.one_of(targets, _HEADER_TEXT).map(lambda target: {**htmx, "HTTP_HX_TARGET": target}),
        st.just({**htmx, "HTTP_HX_HISTORY_RESTORE_REQUEST": "true"}),
        st.tuples(_HEADER_TEXT, st.booleans()).map(
            lambda pair: {
                **htmx,
                "HTTP_HX_CURRENT_URL": pair[0],
                **({"HTTP_HX_CURRENT_URL_URI_AUTOENCODED": "true"} if pair[1] else {}),
            }
        ),
    )


# Cookie values a client can write: a quoted value's backslash escapes are decoded by the
# cookie parser, so "\\000" becomes a NUL.
_COOKIE_VALUES = st.one_of(
    st.sampled_from(
        [
            '"aaaaaaaa\\000bb"',
            '"\\000\\000\\000\\000\\000\\000\\000\\000"',
            '"\\377\\376aaaaaaaa"',
            '"aaaaaaaa\\"b"',
            '"unterminated',
            "%00aaaaaaaa",
            "aaaaaaaa%ED%A0%80",
            "a" * 5_000,
            "é" * 40,
            "x",
            "",
        ]
    ),
    st.text(
        st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters=";"), max_size=60
    ),
)
_COOKIE_NAMES = st.sampled_from(["sessionid", "csrftoken", "messages", "django_language", "x"])


def _cookies() -> st.SearchStrategy[str]:
    pair = st.tuples(_COOKIE_NAMES, _COOKIE_VALUES).map(lambda kv: f"{kv[0]}={kv[1]}")
    return st.lists(pair, min_size=1, max_size=3).map("; ".join)
