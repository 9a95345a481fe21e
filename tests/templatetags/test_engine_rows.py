"""One row of the engines table: exact markup from an engine, its counters and passes."""

from __future__ import annotations

from claims.models import CounterName, Engine
from claims.selectors.engines.listing import EngineRow, PassView
from claims.templatetags.engine_rows import engine_row

# 2025-06-01 12:03:07.250 UTC
NOW_MS = 1_748_779_387_250
TIME = '<time datetime="{}" title="{}">{}</time>'


def a_row(
    *,
    hostname: str = "host-1",
    skew: int | None = -12,
    passes: list[PassView] | None = None,
    late: bool = False,
    skew_over: bool = False,
) -> EngineRow:
    engine = Engine(
        engine_id="e-1",
        hostname=hostname,
        pid=4242,
        status="active",
        heartbeat_at_ms=NOW_MS - 2_000,
        clock_skew_ms=skew,
        clock_error_ms=None if skew is None else 3,
    )
    counters = dict.fromkeys(CounterName.values, 0) | {"acquired": 12_345, "deposed": 2}
    return EngineRow(engine, 7, counters, passes or [], late, skew_over)


def test_row_cells_follow_the_headings():
    """Engine, status, host, heartbeat, holding, skew, the three passes, then the counters."""
    passes = [
        PassView("renew", NOW_MS - 1_000, 40.0, False, {}),
        PassView("reclaim", NOW_MS - 90_000, 1_500, True, {}),
        PassView("wake", None, None, False, {}),
    ]

    html = engine_row(a_row(passes=passes), NOW_MS, "/claims/")

    assert html == (
        "<tr>"
        '<td><a class="mono" href="/engines/e-1/" title="e-1">e-1</a></td>'
        '<td><span class="badge badge--active">active</span></td>'
        '<td class="stack" title="host-1 pid 4242">host-1<small>pid 4242</small></td>'
        "<td>"
        + TIME.format("2025-06-01T12:03:05.250Z", "2025-06-01 12:03:05Z", "2.0 s ago")
        + "</td>"
        '<td class="num"><a href="/claims/?engine=e-1">7</a></td>'
        '<td class="num stack"><span>-12 ms</span><small>± 3 ms</small></td>'
        '<td class="stack">'
        + TIME.format("2025-06-01T12:03:06.250Z", "2025-06-01 12:03:06Z", "1.0 s ago")
        + "<small>40.0 ms</small></td>"
        '<td class="stack">'
        + TIME.format("2025-06-01T12:01:37.250Z", "2025-06-01 12:01:37Z", "1 m 30 s ago")
        + ' <span class="flag">late</span><small>1.5 s</small></td>'
        '<td class="stack"><span class="muted">—</span></td>'
        '<td class="num">12345 / 0</td>'
        '<td class="num">0 / 2 / 0</td>'
        '<td class="num">0</td>'
        "</tr>"
    )


def test_late_heartbeat_skew_over_the_limit_and_a_late_pass_that_never_ran_are_flagged():
    """Each flag sits in its own cell; a pass that never ran is a dash, flagged when late."""
    never_ran = PassView("wake", None, None, True, {})

    html = engine_row(a_row(late=True, skew_over=True, passes=[never_ran]), NOW_MS, "/claims/")

    assert '2.0 s ago</time> <span class="flag">late</span></td>' in html
    assert '<span class="flag">-12 ms</span>' in html
    assert (
        '<td class="stack"><span class="muted">—</span> <span class="flag">late</span></td>' in html
    )


def test_unmeasured_skew_is_a_dash():
    """No skew measured yet: a muted dash, no error bound."""
    html = engine_row(a_row(skew=None), NOW_MS, "/claims/")

    assert '<td class="num stack"><span class="muted">—</span></td>' in html


def test_what_an_engine_reports_about_itself_is_escaped_and_long_hostnames_cut():
    """The hostname is escaped in the cell and its title, and cut to 20 characters."""
    html = engine_row(a_row(hostname='<b>"x"</b>&' + "h" * 30), NOW_MS, "/claims/")

    assert 'title="&lt;b&gt;&quot;x&quot;&lt;/b&gt;&amp;' + "h" * 30 + ' pid 4242"' in html
    assert ">&lt;b&gt;&quot;x&quot;&lt;/b&gt;&amp;hhhhhhhh…<small>" in html
    assert "<b>" not in html
