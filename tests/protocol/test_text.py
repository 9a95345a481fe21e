"""The one input rule, as every interface applies it."""

from __future__ import annotations

import pytest

from claims.protocol.errors import InvalidInputError
from claims.protocol.text import REASON_MAX_LENGTH, check_identifier, check_json_text, check_reason


def test_a_reason_is_stripped_and_may_hold_line_breaks_and_tabs():
    assert check_reason("  line one\n\tline two \r\n") == "line one\n\tline two"


@pytest.mark.parametrize("text", ["", "   ", "\n"])
def test_a_reason_is_required_unless_said_otherwise(text):
    with pytest.raises(InvalidInputError, match="required"):
        check_reason(text)
    assert check_reason(text, required=False) == ""


@pytest.mark.parametrize("text", ["a\x00", "a\x1b", "a\x7f", "a\u200b", "a\u202e"])
def test_a_reason_with_other_control_or_format_characters_is_refused(text):
    with pytest.raises(InvalidInputError, match="control characters"):
        check_reason(text)


def test_a_reason_has_a_length_limit():
    assert check_reason("r" * REASON_MAX_LENGTH)
    with pytest.raises(InvalidInputError, match="at most"):
        check_reason("r" * (REASON_MAX_LENGTH + 1))


@pytest.mark.parametrize("text", ["a\n", "a\t", "a\x00", "a\u200b"])
def test_an_identifier_holds_no_control_character_at_all(text):
    with pytest.raises(InvalidInputError, match="engine must not contain control characters"):
        check_identifier(text, what="engine", max_length=64)


def test_an_identifier_has_a_length_limit():
    with pytest.raises(InvalidInputError, match="at most 3"):
        check_identifier("abcd", what="cursor", max_length=3)


def test_json_is_walked_for_nul_in_keys_and_values():
    assert check_json_text({"a": ["b", {"c": 1.5}], "d": None}, what="input")
    for bad in ({"a\x00": 1}, {"a": ["b\x00"]}, "\x00"):
        with pytest.raises(InvalidInputError, match="NUL"):
            check_json_text(bad, what="input")
