"""The claims list in Chromium: sorting by a heading, substring search, the jump box, the
attention scope, all swapped in place by HTMX, with no serious axe-core violation."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from claims.models import WorkflowStatus

from . import scene
from .conftest import mark_document, still_same_document
from .pages import BY_NAME, SERIOUS, axe_violations, describe, visit

pytestmark = pytest.mark.django_db(transaction=True)


def arrange() -> None:
    scene.make_engine(scene.HOLDER)
    for n, expires in enumerate((70_000, 10_000, 40_000)):
        workflow_id = f"order-{n:03d}"
        scene.make_workflow(workflow_id)
        scene.make_claim(workflow_id, engine=scene.HOLDER, expires_in_ms=expires, epoch=n + 1)
    scene.make_workflow("invoice-stuck")
    scene.make_claim("invoice-stuck", engine=None)
    scene.make_workflow("ledger-done", status=WorkflowStatus.COMPLETED)
    scene.make_claim("ledger-done", engine=None)


def workflow_ids(page) -> list[str]:
    return page.locator("#claims-table tbody tr td:first-child a").all_inner_texts()


def test_sort_by_heading_search_and_jump(page, operator, sign_in, axe_source):
    arrange()
    sign_in(operator)
    visit(page, BY_NAME["claims"])
    mark_document(page)

    # What needs attention by default: the finished workflow's ownerless row is hidden.
    expect(page.locator("#claims-scope")).to_contain_text("need attention")
    assert workflow_ids(page) == ["invoice-stuck", "order-000", "order-001", "order-002"]
    expect(page.locator("#claims-table")).to_contain_text("stranded")

    # Sort by expiry: soonest first, the row without an expiry last; again: reversed.
    page.get_by_role("link", name="Expires").click()
    expect(page.locator("th[aria-sort=ascending]")).to_contain_text("Expires")
    expect(page).to_have_url(re.compile(r"sort=expires_at"))
    assert workflow_ids(page) == ["order-001", "order-002", "order-000", "invoice-stuck"]
    page.get_by_role("link", name="Expires").click()
    expect(page.locator("th[aria-sort=descending]")).to_contain_text("Expires")
    assert workflow_ids(page) == ["order-000", "order-002", "order-001", "invoice-stuck"]
    assert still_same_document(page)

    serious = [v for v in axe_violations(page, axe_source) if v["impact"] in SERIOUS]
    assert not serious, describe(serious)

    # Substring search, swapped in as one types; the sort stays.
    page.get_by_label("Search workflow ids").fill("der-00")
    expect(page.locator("#claims-table h2")).to_contain_text("containing")
    expect(page.locator("#claims-table tbody tr")).to_have_count(3)
    assert workflow_ids(page) == ["order-000", "order-002", "order-001"]
    assert still_same_document(page)

    # Every claim, finished ones included.
    page.get_by_label("Search workflow ids").fill("")
    page.get_by_label("State").select_option("all")
    expect(page.locator("#claims-table")).to_contain_text("ledger-done")

    # The jump box: an exact id opens the workflow; anything else searches.
    page.get_by_label("Jump to workflow id").fill("order-001")
    page.get_by_label("Jump to workflow id").press("Enter")
    expect(page).to_have_url(re.compile(r"/workflows/order-001/$"))
    visit(page, BY_NAME["claims"])
    page.get_by_label("Jump to workflow id").fill("stuck")
    page.get_by_label("Jump to workflow id").press("Enter")
    expect(page.locator("#claims-table tbody tr")).to_have_count(1)
    expect(page.locator("main")).to_contain_text("No workflow has exactly that id")

    serious = [v for v in axe_violations(page, axe_source) if v["impact"] in SERIOUS]
    assert not serious, describe(serious)
