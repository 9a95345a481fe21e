"""The history charts: drawn from what beat kept, so a new tab or a reload shows them at
once, and they pass axe-core in both themes."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from claims.conf import claim_timing
from claims.models import FleetSnapshotHistory
from claims.services.engines import fleet_snapshot_take

from . import scene
from .conftest import ROOT
from .pages import BY_NAME, SERIOUS, axe_violations, describe, visit

MINUTE_MS = 60_000
THEMES = ("light", "dark")
SHOTS = ROOT / "var" / "screenshots"  # untracked: for a person to look at


def half_an_hour_of_history() -> None:
    """Thirty minutes of snapshots as beat keeps them, then a real one taken now."""
    now = scene.now_ms()
    for n in range(30, 0, -1):
        FleetSnapshotHistory.objects.create(
            taken_at_ms=now - n * MINUTE_MS,
            data={
                "counters": {"acquired": 40 * (30 - n), "takeover": 3 * (30 - n), "deposed": 0},
                "by_state": {"live": 60 + n % 7, "in-grace": n % 3, "expired": 1},
                "held": {scene.HOLDER: 20 + n % 5, scene.OTHER: 18, scene.THIRD: 12},
                "passes": {scene.HOLDER: {"renew": 10.0 + n, "reclaim": 35.0}},
                "slowest": {"renew": 10.0 + n, "reclaim": 35.0},
            },
        )
    fleet_snapshot_take(now_ms=now, timing=claim_timing())


def test_charts_are_drawn_from_history_in_a_new_tab_and_after_a_reload(
    page, context, operator, sign_in
):
    scene.busy_fleet()
    half_an_hour_of_history()
    sign_in(operator)

    visit(page, BY_NAME["overview"])
    charts = page.locator("#overview-history svg.chart__svg")
    expect(charts).to_have_count(4)
    expect(page.locator("#overview-history polyline")).not_to_have_count(0)
    expect(page.locator('[data-rate="acquired"]')).to_have_text(re.compile(r"^\d+\.\d/min$"))

    page.reload(wait_until="load")
    expect(charts).to_have_count(4)
    expect(page.locator("#overview-outcomes-title")).to_have_text(
        "Claim attempt outcomes per minute"
    )

    fresh = context.new_page()  # a new tab: no samples in its session storage
    fresh.goto("/", wait_until="load")
    expect(fresh.locator("#overview-history polyline")).not_to_have_count(0)
    expect(fresh.locator("body")).not_to_contain_text("collecting")
    fresh.close()

    visit(page, BY_NAME["engine"])
    expect(page.locator("#engine-history svg.chart__svg")).to_have_count(3)
    expect(page.locator("#engine-held-desc")).to_contain_text(scene.HOLDER)


def test_charts_pass_axe_in_both_themes(page, context, live_server, operator, sign_in, axe_source):
    scene.busy_fleet()
    half_an_hour_of_history()
    sign_in(operator)
    found = {}
    for theme in THEMES:
        context.add_cookies([{"name": "weftboard_theme", "value": theme, "url": live_server.url}])
        page.emulate_media(color_scheme=theme)
        for name in ("overview", "engine"):
            visit(page, BY_NAME[name])
            expect(page.locator("html")).to_have_attribute("data-theme", theme)
            history = page.locator(f"#{name}-history")
            expect(history.locator("svg.chart__svg").first).to_be_visible()
            SHOTS.mkdir(parents=True, exist_ok=True)
            history.screenshot(path=str(SHOTS / f"charts-{name}-{theme}.png"))
            serious = [v for v in axe_violations(page, axe_source) if v["impact"] in SERIOUS]
            if serious:
                found[f"{name} ({theme})"] = describe(serious)

    assert not found, "\n".join(f"{where}:\n{text}" for where, text in found.items())
