"""The query box in Chromium with axe-core: write a query, run it, mend one not understood
from the caret under it, and turn the dropdown filters into a query to edit."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from . import scene
from .pages import SERIOUS, axe_violations, describe


def open_page(page, path: str) -> None:
    page.goto(path, wait_until="load")
    page.wait_for_function(
        "() => window.htmx !== undefined && !document.getElementById('refresh-interval').hidden"
    )


def assert_accessible(page, axe_source) -> None:
    serious = [v for v in axe_violations(page, axe_source) if v["impact"] in SERIOUS]
    assert not serious, describe(serious)


def test_a_query_is_written_run_mended_and_shared_in_the_url(page, operator, sign_in, axe_source):
    scene.make_engine("e-query-3")
    scene.make_workflow("order-expired-1")
    scene.make_claim("order-expired-1", engine="e-query-3", expires_in_ms=-600_000)
    scene.make_workflow("invoice-stranded-1", workflow_type="invoice")
    scene.make_claim("invoice-stranded-1", engine=None)
    sign_in(operator)
    open_page(page, "/claims/")
    table = page.locator("#claims-table")
    box = page.get_by_role("searchbox", name="Query")

    box.fill('type = "order" AND colour = "red"')
    box.press("Enter")

    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("unknown field 'colour'")
    expect(alert.locator("pre")).to_contain_text(" " * 19 + "^")
    expect(box).to_have_attribute("aria-invalid", "true")
    assert_accessible(page, axe_source)

    box.fill('type = "order" AND state = "expired" AND expires > now - 1h')
    box.press("Enter")

    expect(page).to_have_url(re.compile(r"query=type"))
    expect(page.get_by_role("alert")).to_have_count(0)
    expect(table.get_by_role("link", name="order-expired-1", exact=True)).to_be_visible()
    expect(table.get_by_role("link", name="invoice-stranded-1", exact=True)).to_have_count(0)
    # Under a query the query decides: the state dropdown shows every claim.
    expect(page.locator("select[name=state]")).to_have_value("all")

    open_page(page, "/claims/?state=stranded")
    page.get_by_role("link", name="Edit these filters as a query").click()

    expect(box).to_have_value('state = "stranded"')
    expect(table.get_by_role("link", name="invoice-stranded-1", exact=True)).to_be_visible()
    expect(table.get_by_role("link", name="order-expired-1", exact=True)).to_have_count(0)
    assert_accessible(page, axe_source)
