"""An event line splits back into exactly the fields written, whatever their values hold:
no id or message can add a field, end the line or hide itself (claims.protocol.log_events)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from claims.protocol.log_events import event_line, quoted
from tests.log_reader import read_line

FORGED = 'wf-1" epoch=999 engine=forged'
HOSTILE = [
    FORGED,
    "wf-1 epoch=999",
    "wf=1",
    'a"b',
    "a'b",
    "back\\slash",
    'trailing\\"',
    "line\nevent=claim-lost workflow=x",
    "carriage\rreturn",
    "tab\there",
    "nul\x00",
    "esc\x1b[31mred",
    "del\x7f",
    "c1\x85next",
    "line\u2028separator",
    "paragraph\u2029separator",
    "zero\u200bwidth",
    "right\u202eto-left",
    "lone\ud800surrogate",
    "non\u00a0breaking",
    "",
    "-",
    "ünïcödé-ok",
]


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_value_reads_back_as_itself_and_adds_no_field(value):
    line = event_line("claim-lost", workflow=value, epoch=3, engine="e-1")

    assert read_line(line) == [
        ("event", "claim-lost"),
        ("workflow", value),
        ("epoch", "3"),
        ("engine", "e-1"),
    ]
    # Nothing a terminal or a log shipper would act on: no line break, no escape sequence.
    assert line.isprintable(), line


def test_the_forged_fields_stay_inside_the_quoted_value():
    assert event_line("claim-lost", workflow=FORGED, epoch=3) == (
        'event=claim-lost workflow="wf-1\\" epoch=999 engine=forged" epoch=3'
    )


def test_plain_values_stay_bare_and_invisible_characters_are_named():
    assert event_line("takeover", workflow="order-00042", epoch=7, engine=None) == (
        "event=takeover workflow=order-00042 epoch=7 engine=-"
    )
    assert quoted("a\x1b\u2028\x00\U000e0001\\") == '"a\\x1b\\u2028\\x00\\U000e0001\\\\"'


KEYS = st.from_regex(r"[a-z][a-z_]{0,11}", fullmatch=True).filter(lambda key: key != "event")
# Every code point, lone surrogates included.
VALUES = st.text(st.characters(exclude_categories=()), max_size=40)


@given(st.dictionaries(KEYS, VALUES, max_size=6))
def test_any_fields_read_back_as_written(fields):
    line = event_line("some-event", **fields)

    assert read_line(line) == [("event", "some-event"), *fields.items()]
    assert line.isprintable()
