"""axe-core (npm) on every main page, in both themes: no serious or critical violation."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from . import scene
from .pages import MAIN_PAGES, SERIOUS, axe_violations, describe, visit

THEMES = ("light", "dark")


@pytest.mark.parametrize("main", MAIN_PAGES, ids=[page.name for page in MAIN_PAGES])
def test_main_page_has_no_serious_accessibility_violation(
    page, context, live_server, operator, sign_in, axe_source, main
):
    scene.busy_fleet()
    sign_in(operator)
    found = {}
    for theme in THEMES:
        context.add_cookies([{"name": "weftboard_theme", "value": theme, "url": live_server.url}])
        visit(page, main)
        expect(page.locator("h1")).to_have_text(main.heading)
        expect(page.locator("html")).to_have_attribute("data-theme", theme)
        serious = [v for v in axe_violations(page, axe_source) if v["impact"] in SERIOUS]
        if serious:
            found[theme] = describe(serious)

    assert not found, "\n".join(
        f"{main.path} ({theme} theme):\n{text}" for theme, text in found.items()
    )
