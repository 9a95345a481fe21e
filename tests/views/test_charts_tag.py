"""The SVG line chart tag: pure, so given series it is checked without a database."""

from __future__ import annotations

import re

from claims.selectors.fleet.history import Series
from claims.templatetags.charts import (
    BOTTOM,
    HEIGHT,
    LEFT,
    RIGHT,
    TOP,
    WIDTH,
    line_chart,
    nice_ceiling,
    plot_points,
)

START, END = 0, 600_000
BOTTOM_Y = HEIGHT - BOTTOM
RIGHT_X = WIDTH - RIGHT


def chart(*series: Series, unit: str = "") -> str:
    return str(
        line_chart(
            list(series), chart_id="c1", title="Outcomes <per minute>", start_ms=START,
            end_ms=END, unit=unit,
        )
    )  # fmt: skip


def test_points_span_the_window_and_the_nice_top():
    """Time runs left to right over the window; values up to the rounded-up maximum."""
    html = chart(Series("acquired", ((0, 0.0), (300_000, 4.0), (600_000, 8.0))))

    assert nice_ceiling(8.0) == 10.0
    (points,) = re.findall(r'<polyline class="chart__line chart__line--0" points="([^"]+)"', html)
    mid_y = round(TOP + (BOTTOM_Y - TOP) * (1 - 0.4), 1)
    high_y = round(TOP + (BOTTOM_Y - TOP) * (1 - 0.8), 1)
    assert points == f"{LEFT},{BOTTOM_Y} {(LEFT + RIGHT_X) / 2:g},{mid_y:g} {RIGHT_X},{high_y:g}"
    assert ">10</text>" in html
    assert ">0</text>" in html
    assert ">5</text>" in html


def test_title_desc_and_labels_for_assistive_technology():
    html = chart(
        Series("acquired", ((0, 1.0), (60_000, 3.0))),
        Series("deposed", ((0, 0.0), (60_000, 0.5))),
        unit="/min",
    )

    assert 'role="img" aria-labelledby="c1-title c1-desc"' in html
    assert '<title id="c1-title">Outcomes &lt;per minute&gt;</title>' in html
    assert (
        '<desc id="c1-desc">acquired: now 3/min, peak 3/min; deposed: now 0.5/min, peak 0.5/min.'
        in html
    )
    assert 'chart__line--1" points=' in html
    assert html.count("<li>") == 2
    assert "00:00</text>" in html
    assert "00:10 UTC</text>" in html
    assert "style=" not in html
    assert "<script" not in html


def test_an_empty_chart_says_so():
    html = chart(Series("acquired", ()))

    assert "<polyline" not in html
    assert "<circle" not in html
    assert "No history in this window yet" in html
    assert '<desc id="c1-desc">No history in this window yet.</desc>' in html
    assert "no data" in html  # the legend


def test_no_series_at_all_is_empty_too():
    assert "No history in this window yet" in chart()


def test_a_single_point_is_a_dot():
    html = chart(Series("live", ((600_000, 2.0),)))

    assert "<polyline" not in html
    assert re.search(
        rf'<circle class="chart__line chart__line--0" cx="{RIGHT_X}" cy="{TOP}" r="2.5">',
        html,
    )


def test_values_are_clamped_into_the_plot():
    """A point outside the window or above the top stays on the frame."""
    coords = plot_points([(-5, 1.0), (END + 5, 50.0)], start_ms=START, end_ms=END, top=10.0)

    assert coords == [(LEFT, BOTTOM_Y - (BOTTOM_Y - TOP) * 0.1), (RIGHT_X, TOP)]


def test_nice_ceiling():
    assert [nice_ceiling(v) for v in (0, 0.3, 1, 1.2, 3, 7, 12, 99, 101)] == [
        1, 0.5, 1, 2, 5, 10, 20, 100, 200,
    ]  # fmt: skip
