"""Saved views in Chromium with axe-core: type a query, save it under a name, find it in the
strip, and get the list filtered by it in one click from the unfiltered list."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from claims.models import SavedQuery

from . import scene
from .test_query_box import assert_accessible, open_page


def test_a_query_is_saved_and_applied_in_one_click(page, operator, sign_in, axe_source):
    scene.make_engine("e-saved-1")
    scene.make_workflow("order-expired-7")
    scene.make_claim("order-expired-7", engine="e-saved-1", expires_in_ms=-600_000)
    scene.make_workflow("invoice-stranded-7", workflow_type="invoice")
    scene.make_claim("invoice-stranded-7", engine=None)
    sign_in(operator)
    open_page(page, "/claims/")
    strip = page.get_by_role("navigation", name="Saved views")
    table = page.locator("#claims-table")
    expect(strip).to_contain_text("none yet")

    box = page.get_by_role("searchbox", name="Query")
    box.fill('state = "expired"')
    box.press("Enter")
    save = page.get_by_role("form", name="Save this query")
    save.get_by_label("Save this query as").fill("Expired claims")
    # The operator may not share: the box is not offered.
    expect(save.get_by_label("share with everyone")).to_have_count(0)
    save.get_by_role("button", name="Save view").click()

    view = strip.get_by_role("link", name="Expired claims")
    expect(view).to_be_visible()
    expect(view).to_have_attribute("aria-current", "true")
    expect(strip).to_contain_text("own")
    assert SavedQuery.objects.get().query == 'state = "expired"'
    assert_accessible(page, axe_source)

    open_page(page, "/claims/?state=all")
    expect(table.get_by_role("link", name="invoice-stranded-7", exact=True)).to_be_visible()
    strip.get_by_role("link", name="Expired claims").click()

    expect(page).to_have_url(re.compile(r"\?query=state%20%3D%20%22expired%22$"))
    expect(box).to_have_value('state = "expired"')
    expect(table.get_by_role("link", name="order-expired-7", exact=True)).to_be_visible()
    expect(table.get_by_role("link", name="invoice-stranded-7", exact=True)).to_have_count(0)

    strip.get_by_role("button", name="Delete saved view Expired claims").click()

    expect(strip.get_by_role("link", name="Expired claims")).to_have_count(0)
    assert not SavedQuery.objects.exists()
