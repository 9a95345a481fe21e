"""Time, ids and badges as operators read them: UTC everywhere, relative text, absolute on hover."""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import cache
from typing import Any
from urllib.parse import quote

from django import template
from django.urls import get_script_prefix, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from claims.protocol.constants import MAX_SAFE_INTEGER
from claims.protocol.errors import InvalidInputError
from claims.protocol.times import time_of_ms
from claims.views.id_paths import escape_id

register = template.Library()

STATE_HELP = {
    "live": "The holder renewed within the TTL; nothing to do.",
    "in-grace": "Past expires_at but within 2 x renew interval: takeover is not allowed yet "
    "and the holder may still renew.",
    "expired": "Past the grace: the next reclaim pass of any engine takes it over.",
    "invalid": "Malformed holder (blank engine, epoch mismatch or bad times): stealable at once.",
    "ownerless": "No holder: if the workflow is running, the next reclaim pass claims it.",
}
STATE_ICON = {"live": "●", "in-grace": "◐", "expired": "○", "invalid": "✕", "ownerless": "\u2013"}
SHORT_ID = 14
# What reverse() leaves unescaped in a path argument (RFC 3986 sub-delims and "/~:@").
URL_SAFE = "!$&'()*+,;=/~:@"
PLACEHOLDER = "__weftboard_id__"


@cache
def _url_parts(name: str, script_prefix: str) -> tuple[str, str]:
    before, after = reverse(name, args=[PLACEHOLDER]).split(PLACEHOLDER)
    return before, after


@register.simple_tag
def id_url(name: str, value: str) -> str:
    """reverse(name, args=[value]) for a one-id path route, without a resolver walk per row:
    a table of 50 rows asks for hundreds of these."""
    before, after = _url_parts(name, get_script_prefix())
    return before + quote(escape_id(value), safe=URL_SAFE) + after


def _moment(ms: int) -> datetime | None:
    """The instant, or None for a value no date can show (outside years 1 to 9999: only a
    row another program wrote can hold one, since every interface refuses them)."""
    try:
        return time_of_ms(ms)
    except InvalidInputError:
        return None


def _formatted(ms: int, pattern: str) -> str:
    moment = _moment(ms)
    return f"{ms} ms" if moment is None else moment.strftime(pattern)


@register.filter
def utc(ms: int | None) -> str:
    """2025-06-01 12:03:07Z"""
    return "—" if ms is None else _formatted(ms, "%Y-%m-%d %H:%M:%SZ")


@register.filter
def utc_time(ms: int | None) -> str:
    return "—" if ms is None else _formatted(ms, "%H:%M:%S")


@register.filter
def iso(ms: int | None) -> str:
    from claims.utc_text import iso_utc

    return iso_utc(ms)


@register.filter
def iso_field(value: str | None) -> str:
    """A date field's value shown back as ISO 8601 UTC (2026-12-03T09:30:00Z); text that
    does not parse is shown as typed, next to the page's error."""
    from claims.utc_text import iso_utc_field, parse_iso_utc

    if not value:
        return ""
    try:
        return iso_utc_field(parse_iso_utc(value))
    except ValueError:
        return value


@register.filter
def timedelta_duration(value: timedelta | None) -> str:
    """A timedelta as duration() writes it: 15 m 00 s."""
    return "—" if value is None else duration(value.total_seconds() * 1000)


@register.filter
def duration(ms: float | int | None) -> str:
    """12.3 ms, 4.2 s, 3 m 04 s, 2 h 03 m, 3 d 4 h."""
    if ms is None:
        return "—"
    # An int too large for a float (a garbled row) is shown as the largest duration.
    ms = abs(float(min(max(ms, -MAX_SAFE_INTEGER), MAX_SAFE_INTEGER)))
    if ms < 1_000:
        return f"{ms:.1f} ms" if ms < 100 else f"{ms:.0f} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    minutes, sec = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} m {sec:02d} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes:02d} m"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"


@register.filter
def ago(ms: int | None, now_ms: int) -> str:
    if ms is None:
        return "never"
    delta = now_ms - ms
    if abs(delta) < 1_000:
        return "now"
    return f"{duration(delta)} ago" if delta > 0 else f"in {duration(delta)}"


@register.filter
def short_id(value: str | None) -> str:
    """Long (uuid) engine ids cut to their first characters; the full id goes in a title."""
    if not value:
        return "—"
    return value if len(value) <= SHORT_ID else value[:8] + "…"


@register.simple_tag
def when(ms: int | None, now_ms: int) -> SafeString:
    """Relative text, the exact UTC time on hover and in datetime=."""
    if ms is None:
        return mark_safe('<span class="muted">never</span>')
    moment = _moment(ms)
    if moment is None:
        return format_html('<span class="muted">{} ms</span>', ms)
    exact = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    # Built directly rather than with format_html: a table of 50 engines asks for 200 of
    # these, and every part is digits, separators or unit words, with nothing to escape.
    return mark_safe(
        f'<time datetime="{exact}" title="{moment:%Y-%m-%d %H:%M:%SZ}">{ago(ms, now_ms)}</time>'
    )


@register.simple_tag
def as_of(ms: int) -> SafeString:
    return format_html(
        '<p class="as-of" data-as-of="{}">as of <time datetime="{}">{} UTC</time>'
        '<span class="as-of__stale" hidden> · stale</span></p>',
        ms,
        iso(ms),
        utc_time(ms),
    )


@register.simple_tag
def utc_time_of(ms: int) -> str:
    return utc_time(ms)


@register.simple_tag
def state_badge(state: str) -> SafeString:
    return format_html(
        '<span class="badge badge--{}" title="{}"><span aria-hidden="true">{}</span> {}</span>',
        state,
        STATE_HELP.get(state, ""),
        STATE_ICON.get(state, ""),
        state.replace("-", " "),
    )


@register.simple_tag
def status_badge(status: str) -> SafeString:
    return format_html(
        '<span class="status status--{}">{}</span>', status, status.replace("_", " ")
    )


def countdown_text(expires_ms: int, now_ms: int, grace_ms: int) -> tuple[str, str]:
    """The words and CSS modifier weftboard.js also computes every second."""
    left = expires_ms - now_ms
    if left >= 0:
        return f"in {duration(left)}", ""
    if -left <= grace_ms:
        return f"grace · takeover in {duration(grace_ms + left)}", " countdown--grace"
    return f"expired {duration(left)} ago", " countdown--expired"


@register.simple_tag
def countdown(expires_ms: int | None, now_ms: int, grace_ms: int) -> SafeString:
    """A live countdown to expiry (ticked by weftboard.js) with the grace end on hover."""
    if expires_ms is None:
        return mark_safe('<span class="muted">—</span>')
    text, modifier = countdown_text(expires_ms, now_ms, grace_ms)
    return format_html(
        '<span class="countdown{}" data-expires-at="{}" data-grace-ms="{}" '
        'title="expires {} · takeover allowed after {}">{}</span>',
        modifier,
        expires_ms,
        grace_ms,
        utc(expires_ms),
        utc(expires_ms + grace_ms),
        text,
    )


def engine_link(engine_id: str | None) -> SafeString:
    """The engine's page, linked by its short id (the whole id in the title)."""
    if not engine_id:
        return mark_safe('<span class="muted">—</span>')
    return format_html(
        '<a class="mono" href="{}" title="{}">{}</a>',
        id_url("claims:engine", engine_id),
        engine_id,
        short_id(engine_id),
    )


ENGINE_LABELS_KEY = "_weftboard_engine_labels"


@register.simple_tag(takes_context=True, name="engine_link")
def engine_link_labelled(context: template.Context, engine_id: str | None) -> SafeString:
    """``engine_link`` with the engine's worker name and pid beside it. Every engine's label
    is read once per request, on first use (one query), so a page of 50 rows costs no more
    than one; a pruned engine shows its id alone."""
    link = engine_link(engine_id)
    if not engine_id:
        return link
    label = _engine_labels(context).get(engine_id)
    if label is None:
        return link
    name = f"{label.name} · " if label.name else ""
    return format_html('{}<span class="engine-label">{}pid {}</span>', link, name, label.pid)


def _engine_labels(context: template.Context) -> dict[str, Any]:
    from claims.selectors.engines.names import engine_labels

    # Kept on the request, so a page's included templates share one read.
    holder = context.get("request") or context.render_context
    labels = getattr(holder, ENGINE_LABELS_KEY, None)
    if labels is None:
        labels = engine_labels()
        setattr(holder, ENGINE_LABELS_KEY, labels)
    return labels


@register.simple_tag
def workflow_link(workflow_id: str) -> SafeString:
    return format_html(
        '<a class="mono" href="{}">{}</a>',
        id_url("claims:workflow", workflow_id),
        workflow_id,
    )


# The server's default; weftboard.js rewrites it from the user's refresh setting.
# No event filter ("every 5s [cond]"): htmx evaluates those as code, which the
# Content-Security-Policy forbids; weftboard.js skips a poll while the tab is hidden.
LIVE_TRIGGER = "every 5s, refresh, claimChanged from:body"


@register.simple_tag(takes_context=True)
def live(context: template.Context, as_of_ms: int) -> SafeString:
    """Attributes that make an element a live fragment: it polls its own URL and swaps itself."""
    return format_html(
        'data-live hx-get="{}" hx-trigger="{}" hx-swap="outerHTML" data-as-of-ms="{}"',
        context["request"].get_full_path(),
        LIVE_TRIGGER,
        as_of_ms,
    )


@register.simple_tag
def live_url(url_name: str) -> SafeString:
    """Attributes that make an element poll ``url_name`` (a fragment of its own, such as
    the frame's alert) and swap itself, at the pace of the page's live fragments."""
    return format_html(
        'data-live hx-get="{}" hx-trigger="{}" hx-swap="outerHTML"', reverse(url_name), LIVE_TRIGGER
    )


@register.simple_tag
def percent(part: int | float, whole: int | float) -> str:
    """part / whole as a CSS percentage, 0 when whole is 0."""
    return f"{(100 * part / whole) if whole else 0:.1f}%"
