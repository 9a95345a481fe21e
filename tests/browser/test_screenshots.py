"""Screenshots of the main pages for the README, into docs/screenshots/ (overwritten).

Only with WEFTBOARD_SCREENSHOTS=1, so a CI run never rewrites tracked files.
"""

from __future__ import annotations

import json
import os

import pytest
from playwright.sync_api import expect

from . import scene
from .conftest import SCREENSHOTS
from .pages import BY_NAME, visit

SHOTS = ("overview", "claims", "workflow", "engines", "reclaim", "backfills", "audit")


@pytest.mark.skipif(
    os.environ.get("WEFTBOARD_SCREENSHOTS", "").strip() != "1",
    reason="screenshots are taken only with WEFTBOARD_SCREENSHOTS=1 (they rewrite docs/)",
)
def test_screenshots_of_the_main_pages(page, context, live_server, operator, sign_in):
    scene.busy_fleet()
    sign_in(operator)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    # The overview's sparklines draw from samples this tab polled; give it a few minutes' worth.
    samples = json.dumps(json.dumps(scene.outcome_samples()))
    context.add_init_script(f"sessionStorage.setItem('weftboard.samples', {samples});")
    for name in SHOTS:
        visit(page, BY_NAME[name])
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
    context.add_cookies([{"name": "weftboard_theme", "value": "dark", "url": live_server.url}])
    visit(page, BY_NAME["overview"])
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    page.screenshot(path=str(SCREENSHOTS / "overview-dark.png"), full_page=True)

    for name in (*SHOTS, "overview-dark"):
        assert (SCREENSHOTS / f"{name}.png").stat().st_size > 10_000, name
