"""A silent engine shows red `silent` at once, and every page says when no engine runs;
axe-core finds nothing serious on either, in both themes."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from claims.models import Engine

from . import scene
from .pages import SERIOUS, MainPage, axe_violations, describe, visit

ENGINES = MainPage("engines-silent", "/engines/", "Engines")
SILENT_ID = "e-5ilent"
ENGINE = MainPage("engine-silent", f"/engines/{SILENT_ID}/", SILENT_ID)
THEMES = ("light", "dark")
SILENT_AGO_MS = scene.TTL_MS + 2 * scene.RENEW_MS + 5_000


def red_dominates(page: Any, selector: str) -> bool:
    """The element's text colour is a red: its red channel well above green and blue."""
    rgb = page.eval_on_selector(
        selector,
        "e => getComputedStyle(e).color.match(/\\d+/g).slice(0, 3).map(Number)",
    )
    red, green, blue = rgb
    return red > green + 60 and red > blue + 60


def test_a_silent_engine_is_red_and_the_floor_alert_is_on_every_page(
    page: Any, context: Any, live_server: Any, operator: Any, sign_in: Any, axe_source: str
) -> None:
    scene.make_engine(SILENT_ID, heartbeat_ago_ms=SILENT_AGO_MS)
    Engine.objects.filter(engine_id=SILENT_ID).update(name="engine1@worker-a")
    scene.make_claim("wf-held-by-silent", engine=SILENT_ID, expires_in_ms=-2_000)
    sign_in(operator)

    found = {}
    for theme in THEMES:
        context.add_cookies([{"name": "weftboard_theme", "value": theme, "url": live_server.url}])
        for main in (ENGINES, ENGINE):
            visit(page, main)
            alert = page.locator("#engine-floor-alert [role=alert]")
            expect(alert).to_contain_text("No engine is running")
            if main is ENGINES:
                badge = page.locator("#engines-live .badge--silent")
                expect(badge).to_have_text("silent")
                expect(page.locator("#engines-live")).to_contain_text("engine1@worker-a")
                assert red_dominates(page, "#engines-live .badge--silent")
            else:
                expect(page.locator("#engine-live .badge--silent")).to_have_text("silent")
                expect(page.locator("#engine-live")).to_contain_text("1 claim held")
            serious = [v for v in axe_violations(page, axe_source) if v["impact"] in SERIOUS]
            if serious:
                found[f"{main.path} ({theme})"] = describe(serious)

    assert not found, "\n".join(f"{where}:\n{text}" for where, text in found.items())


def test_the_alert_goes_once_an_engine_runs(page: Any, operator: Any, sign_in: Any) -> None:
    scene.make_engine("e-a11ve")
    sign_in(operator)

    visit(page, ENGINES)

    expect(page.locator("#engines-live .badge--active")).to_have_text("active")
    expect(page.locator("#engine-floor-alert")).to_have_count(0)
