"""Hostile values for the page fuzz, and how they are written into a URL.

A value is text (percent-encoded as UTF-8 on the way out, lone surrogates as the bytes
%ED%A0%80 a browser or a script could send) or raw (written into the URL as it is:
invalid percent-escapes, encoded dot segments, bytes that are no UTF-8)."""

# Characters that look like others (Arabic-Indic and fullwidth digits) are the point here.
# ruff: noqa: RUF001

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from hypothesis import strategies as st


@dataclass(frozen=True)
class Raw:
    """URL text sent as it is."""

    text: str


Value = str | Raw


def url_text(value: Value, *, safe: str = "") -> str:
    if isinstance(value, Raw):
        return value.text
    return quote(value.encode("utf-8", "surrogatepass"), safe=safe)


CONTROL = [chr(c) for c in (*range(0x20), 0x7F, 0x85, 0x9F)]
FORMAT = ["\u200b", "\u200e", "\u202e", "\u2066", "\ufeff", "\u00ad"]
SURROGATES = ["\ud800", "\udfff", "a\udc00b", "\udbff\ud800"]
NONCHARACTERS = ["\ufffe", "\uffff", "\U0010ffff", "\U000e0001", "\ue000", "\u0378"]
BLANK = ["", " ", "   ", "\t", "\n", "\r\n", "\u3000", "\u00a0", "\u2028", " \x00 "]
NUMBERS = [
    "0",
    "-0",
    "-1",
    "+1",
    " 7 ",
    "1.5",
    "1e3",
    "1e308",
    "-1e308",
    "nan",
    "inf",
    "0x10",
    "1_000",
    "007",
    str(2**31),
    str(2**53 - 1),
    str(2**53),
    str(2**63 - 1),
    str(2**63),
    str(-(2**63)),
    str(2**64),
    "9" * 40,
    "9" * 5_000,
    "-" + "9" * 400,
]
# Digits that str.isdigit() and int() accept but that are not ASCII.
UNICODE_DIGITS = ["١٢٣", "۴۵", "१२", "１２", "²", "৩", "߁", "𝟙𝟚", "٠"]
DATES = [
    "0000-01-01T00:00:00Z",
    "0000-12-31T23:59Z",
    "0001-01-01T00:00:00Z",
    "0001-01-01T00:00:00+14:00",
    "1969-12-31T23:59:59.999Z",
    "1970-01-01T00:00:00Z",
    "9999-12-31T23:59:59.999Z",
    "9999-12-31T23:59:59.999999Z",
    "9999-12-31T23:59:59-14:00",
    "9999-12-31T23:59",
    "10000-01-01T00:00:00Z",
    "+275760-09-13T00:00:00Z",
    "275760-09-13T00:00:00.000Z",
    "-271821-04-20T00:00:00Z",
    "-000001-01-01T00:00:00Z",
    "2026-02-30T00:00",
    "2026-13-01T00:00",
    "2026-12-03T24:00",
    "2026-12-03T23:60",
    "2026-12-03T09:30:00.1234567891234Z",
    "2026-12-03T09:30+99:99",
    "2026-12-03T09:30+14:01",
    "2026-12-03T09:30-23:59",
    "2026-12-03",
    "2026-W49-1",
    "20261203T093000Z",
    "2026-12-03 09:30",
    "2026-12-03t09:30z",
    "٢٠٢٦-١٢-٠٣T٠٩:٣٠",
    "２０２６-12-03T09:30",
    "2026-12-03T09:30Z\x00",
    "T",
    "Z",
    "1e300",
    str(2**63),
]
DOTS = [".", "..", "../x", "./", "../../admin/", "a/../b", "~..", "~.", "...", "/", "//x", "\\..\\"]
RAW_DOTS = ["%2e%2e", "%2E%2e/x", ".%2e", "%2e", "..%2f..", "..%5c..", "%252e%252e"]
RAW_ESCAPES = ["%", "%%", "%zz", "%E", "%ED%A0%80", "%ED%BF%BF", "%C0%AF", "%C0%80", "%FF%FE"]
RAW_ESCAPES += ["%F4%90%80%80", "%00", "a%00b", "%0d%0aX-Injected:%201", "+", "%2B", "&", "="]
MARKUP = ["'", '"', "\\", "%", "_", "*", "' OR '1'='1", "<script>x</script>", "{{ x }}", "${x}"]
MARKUP += ["?", "#", ";", "a,b", "\\x00", "%00", "null", "None", "true", "[]", "{}"]
LONG = ["a" * 10_000, "é" * 5_000, "\U0001f600" * 3_000, "order-" * 42, "/" * 2_000, "%" * 300]

TEXT = [*CONTROL, *FORMAT, *SURROGATES, *NONCHARACTERS, *BLANK, *NUMBERS, *UNICODE_DIGITS]
TEXT += [*DATES, *DOTS, *MARKUP, *LONG]
RAW = [*RAW_DOTS, *RAW_ESCAPES]


def hostile() -> st.SearchStrategy[Value]:
    """Any hostile value, or one built around a catalogue entry."""
    catalogue: st.SearchStrategy[str] = st.sampled_from(TEXT)
    return st.one_of(
        catalogue,
        st.sampled_from(RAW).map(Raw),
        # Unescaped text in the URL, as a careless client writes it (the test client
        # sends it as UTF-8; it cannot send a lone surrogate unescaped).
        st.text(st.characters(codec="utf-8"), max_size=20).map(Raw),
        st.tuples(st.text(max_size=8), catalogue, st.text(max_size=8)).map("".join),
        # Anything at all, surrogates and controls included.
        st.text(st.characters(codec=None), max_size=40),
        st.integers().map(str),
    )


def with_hostile(valid: st.SearchStrategy[Value]) -> st.SearchStrategy[Value]:
    """Valid values half the time, so the fuzz reaches past the input checks; hostile
    ones, and valid ones spoiled by a hostile prefix or suffix, the rest."""
    spoiled = st.tuples(valid, hostile()).map(lambda pair: _joined(*pair))
    return st.one_of(valid, valid, hostile(), spoiled)


def _joined(first: Value, second: Value) -> Value:
    if isinstance(first, Raw) or isinstance(second, Raw):
        return Raw(url_text(first) + url_text(second))
    return first + second


# JSON a cursor could be edited to hold.
JSON_HOSTILE: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([2**63, -(2**63) - 1, 2**64, 10**400, 2**53]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(TEXT),
    st.text(st.characters(codec=None), max_size=20),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def edited_claims_cursor(cursor: str) -> st.SearchStrategy[Value]:
    """A "k1." cursor of the claims page with one of its fields replaced, or reshaped."""
    tag, _, body = cursor.partition(".")
    try:
        payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except ValueError:
        return st.just(cursor)
    if not isinstance(payload, list):
        return st.just(cursor)

    def replaced(index_value: tuple[int, Any]) -> list[Any]:
        index, value = index_value
        edited = list(payload)
        edited[index % len(edited)] = value
        return edited

    edits: st.SearchStrategy[Any] = st.one_of(
        st.tuples(st.integers(0, 2), JSON_HOSTILE).map(replaced),
        st.lists(JSON_HOSTILE, max_size=5),
        JSON_HOSTILE,
    )
    return edits.map(lambda edited: _claims_cursor(tag, edited))


def _claims_cursor(tag: str, payload: Any) -> str:
    # ensure_ascii: a lone surrogate stays a \ud800 escape, as an edited cursor carries it.
    text = json.dumps(payload)
    return f"{tag}." + base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def edited_time_cursor(cursor: str) -> st.SearchStrategy[Value]:
    """A workflows cursor ``<ms>:<workflow id>`` with either half replaced."""
    at, sep, workflow_id = cursor.partition(":")
    if not sep:
        return st.just(cursor)
    numbers = st.one_of(st.sampled_from([*NUMBERS, *UNICODE_DIGITS]), st.integers().map(str))
    return st.one_of(
        numbers.map(lambda n: f"{n}:{workflow_id}"),
        st.sampled_from(TEXT).map(lambda text: f"{at}:{text}"),
    )
