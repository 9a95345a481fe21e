"""Line charts as inline SVG, drawn on the server from the fleet snapshot history.

No script and no style attribute: colours come from classes in static/weftboard.css
(CSS custom properties, so both themes apply). Each chart is a ``role="img"`` with a
<title> and a <desc> that says in words what the lines show, for screen readers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from claims.selectors.fleet.history import Series

register = template.Library()

WIDTH, HEIGHT = 600, 170
LEFT, RIGHT, TOP, BOTTOM = 44, 10, 10, 22
PALETTE_SIZE = 6  # .chart__line--0 … --5 in weftboard.css
DOT_RADIUS = 2.5


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 5 x 10^k at or above ``value``; 1 for nothing to show."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    magnitude = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if value <= step * magnitude:
            return float(step * magnitude)
    return float(10 * magnitude)  # pragma: no cover - the loop always returns


def number(value: float) -> str:
    """A value as the axis and the description read it: 12, 3.5, 0.25."""
    return (
        f"{value:.0f}" if value == int(value) else f"{value:.2g}" if value < 1 else f"{value:.1f}"
    )


def clock(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%H:%M")


def plot_points(
    points: Sequence[tuple[int, float]], *, start_ms: int, end_ms: int, top: float
) -> list[tuple[float, float]]:
    """Data to SVG coordinates: time across the window, value up from the bottom."""
    span_ms = max(1, end_ms - start_ms)
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    return [
        (
            round(LEFT + inner_w * min(1.0, max(0.0, (t - start_ms) / span_ms)), 1),
            round(TOP + inner_h * (1 - min(1.0, max(0.0, v / top))), 1),
        )
        for t, v in points
    ]


def _describe(series: Sequence[Series], unit: str) -> str:
    parts = []
    for s in series:
        if not s.points:
            parts.append(f"{s.name}: no data")
            continue
        peak = max(v for _, v in s.points)
        latest = s.points[-1][1]
        parts.append(f"{s.name}: now {number(latest)}{unit}, peak {number(peak)}{unit}")
    return "; ".join(parts) + "."


def _frame(top: float, start_ms: int, end_ms: int) -> SafeString:
    """Grid lines at 0, half and top, their labels, and the window's two ends (the unit is
    in the title and the legend: on the axis it would not fit)."""
    rows = []
    for fraction in (0.0, 0.5, 1.0):
        y = round(TOP + (HEIGHT - TOP - BOTTOM) * (1 - fraction), 1)
        rows.append(
            format_html(
                '<line class="chart__grid" x1="{}" x2="{}" y1="{}" y2="{}"></line>'
                '<text class="chart__label" x="{}" y="{}" text-anchor="end">{}</text>',
                LEFT, WIDTH - RIGHT, y, y, LEFT - 4, y + 4, number(top * fraction),
            )
        )  # fmt: skip
    base = HEIGHT - 6
    rows.append(
        format_html(
            '<text class="chart__label" x="{}" y="{}">{}</text>'
            '<text class="chart__label" x="{}" y="{}" text-anchor="end">{} UTC</text>',
            LEFT, base, clock(start_ms), WIDTH - RIGHT, base, clock(end_ms),
        )
    )  # fmt: skip
    return format_html('<g aria-hidden="true">{}</g>', mark_safe("".join(rows)))


def _line(index: int, s: Series, coords: list[tuple[float, float]]) -> SafeString:
    css = f"chart__line chart__line--{index % PALETTE_SIZE}"
    if len(coords) == 1:
        (x, y), = coords  # fmt: skip
        return format_html(
            '<circle class="{}" cx="{}" cy="{}" r="{}"></circle>',
            css,
            f"{x:g}",
            f"{y:g}",
            DOT_RADIUS,
        )
    points = " ".join(f"{x:g},{y:g}" for x, y in coords)
    return format_html('<polyline class="{}" points="{}"></polyline>', css, points)


def _legend(series: Sequence[Series], unit: str) -> SafeString:
    return format_html_join(
        "",
        '<li><span class="chart__swatch chart__swatch--{}" aria-hidden="true"></span>{}'
        ' <span class="muted">{}</span></li>',
        (
            (
                i % PALETTE_SIZE,
                s.name,
                "no data" if s.latest is None else f"{number(s.latest)}{unit}",
            )
            for i, s in enumerate(series)
        ),
    )


@register.simple_tag
def line_chart(
    series: Sequence[Series],
    *,
    chart_id: str,
    title: str,
    start_ms: int,
    end_ms: int,
    unit: str = "",
) -> SafeString:
    """A figure: the SVG lines over [start_ms, end_ms] and a legend with the latest values.

    A series with one point is a dot; a chart with no points says so instead of lines.
    """
    drawn = [s for s in series if s.points]
    top = nice_ceiling(max((v for s in drawn for _, v in s.points), default=0.0))
    if drawn:
        description = _describe(series, unit)
        body = format_html_join(
            "",
            "{}",
            (
                (_line(i, s, plot_points(s.points, start_ms=start_ms, end_ms=end_ms, top=top)),)
                for i, s in enumerate(series)
                if s.points
            ),
        )
    else:
        description = "No history in this window yet."
        body = format_html(
            '<text class="chart__empty" x="{}" y="{}" text-anchor="middle">{}</text>',
            WIDTH / 2, HEIGHT / 2, "No history in this window yet",
        )  # fmt: skip
    return format_html(
        '<figure class="chart" id="{id}">'
        '<svg class="chart__svg" viewBox="0 0 {w} {h}" role="img"'
        ' aria-labelledby="{id}-title {id}-desc">'
        '<title id="{id}-title">{title}</title><desc id="{id}-desc">{desc}</desc>'
        "{frame}{body}</svg>"
        '<ul class="chart__legend">{legend}</ul></figure>',
        id=chart_id,
        w=WIDTH,
        h=HEIGHT,
        title=title,
        desc=description,
        frame=_frame(top, start_ms, end_ms),
        body=body,
        legend=_legend(series, unit),
    )
