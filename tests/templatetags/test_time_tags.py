"""The time tag every live table repeats on each row: exact markup, no database."""

from __future__ import annotations

from claims.templatetags.weftboard import when

# 2025-06-01 12:03:07.250 UTC
AT_MS = 1_748_779_387_250


def test_when_is_relative_text_with_the_exact_utc_time_in_datetime_and_on_hover():
    """Past, future and the instant itself; milliseconds kept only in datetime=."""
    assert when(AT_MS, AT_MS + 5_000) == (
        '<time datetime="2025-06-01T12:03:07.250Z" title="2025-06-01 12:03:07Z">5.0 s ago</time>'
    )
    assert when(AT_MS, AT_MS - 90_000).endswith(">in 1 m 30 s</time>")
    assert when(AT_MS, AT_MS + 400).endswith(">now</time>")


def test_when_of_nothing_is_never():
    """A time that was never set reads 'never', muted."""
    assert when(None, AT_MS) == '<span class="muted">never</span>'
