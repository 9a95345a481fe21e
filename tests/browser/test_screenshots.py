"""Screenshots of the main pages, taken by every run into var/screenshots/; with
WEFTBOARD_SCREENSHOTS=1 into docs/screenshots/ (the README's pictures) instead, so an
ordinary run never rewrites tracked files.
"""

from __future__ import annotations

import json
import os

from playwright.sync_api import expect

from . import scene
from .conftest import SCREENSHOTS
from .pages import BY_NAME, visit

SHOTS = ("overview", "claims", "workflow", "engines", "reclaim", "backfills", "audit")


def screenshot_folder():
    if os.environ.get("WEFTBOARD_SCREENSHOTS", "").strip() == "1":
        return SCREENSHOTS
    return SCREENSHOTS.parents[1] / "var" / "screenshots"


def test_screenshots_of_the_main_pages(page, context, live_server, operator, sign_in):
    """Each main page renders with a busy fleet and is saved as a picture."""
    folder = screenshot_folder()
    scene.busy_fleet()
    sign_in(operator)
    folder.mkdir(parents=True, exist_ok=True)
    # The overview's sparklines draw from samples this tab polled; give it a few minutes' worth.
    samples = json.dumps(json.dumps(scene.outcome_samples()))
    context.add_init_script(f"sessionStorage.setItem('weftboard.samples', {samples});")
    for name in SHOTS:
        visit(page, BY_NAME[name])
        page.screenshot(path=str(folder / f"{name}.png"), full_page=True)
    context.add_cookies([{"name": "weftboard_theme", "value": "dark", "url": live_server.url}])
    visit(page, BY_NAME["overview"])
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    page.screenshot(path=str(folder / "overview-dark.png"), full_page=True)

    for name in (*SHOTS, "overview-dark"):
        assert (folder / f"{name}.png").stat().st_size > 10_000, name
