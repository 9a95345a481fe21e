"""A reader of ``key=value`` log lines, as a log shipper or a grep script would split
them: the tests hold every logged line to it."""

from __future__ import annotations

import re

# \xNN, \uNNNN or \UNNNNNNNN, or one of the named escapes.
_ESCAPE = re.compile(r'\\(x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8}|[\\"nrt])')
_NAMED = {"\\": "\\", '"': '"', "n": "\n", "r": "\r", "t": "\t"}


def read_line(line: str) -> list[tuple[str, str]]:
    """Split a line as a log reader would: fields apart at spaces, ``key=`` then a bare
    value or a double-quoted one with backslash escapes."""
    fields: list[tuple[str, str]] = []
    at = 0
    while at < len(line):
        key_end = line.index("=", at)
        key = line[at:key_end]
        at = key_end + 1
        if line.startswith('"', at):
            value, at = _read_quoted(line, at + 1)
        else:
            end = line.find(" ", at)
            end = len(line) if end < 0 else end
            value, at = line[at:end], end
        fields.append((key, value))
        if at < len(line):
            assert line[at] == " ", f"a field runs on past its end at {at}: {line!r}"
            at += 1
    return fields


def _read_quoted(line: str, at: int) -> tuple[str, int]:
    chars = []
    while line[at] != '"':
        if line[at] == "\\":
            escape = _ESCAPE.match(line, at)
            assert escape is not None, f"an unknown escape at {at}: {line!r}"
            code = escape.group(1)
            chars.append(_NAMED[code] if code in _NAMED else chr(int(code[1:], 16)))
            at = escape.end()
        else:
            chars.append(line[at])
            at += 1
    return "".join(chars), at + 1


def read_braced(text: str) -> list[tuple[str, str]]:
    """Split ``{key: "value", key: "value"}`` (how a sign-in is named in the lockout log)
    into its fields, each value a double-quoted one with backslash escapes."""
    assert text.startswith("{"), text
    assert text.endswith("}"), text
    fields: list[tuple[str, str]] = []
    at = 1
    while at < len(text) - 1:
        key_end = text.index(': "', at)
        key = text[at:key_end]
        value, at = _read_quoted(text, key_end + 3)
        fields.append((key, value))
        if text.startswith(", ", at):
            at += 2
    assert at == len(text) - 1, f"the fields end before the closing brace: {text!r}"
    return fields
