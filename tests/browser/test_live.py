"""Logging in, and pages that change while you watch them: countdowns and polled counters."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from claims.models import ClaimCounter

from . import scene
from .conftest import mark_document, set_refresh_interval, still_same_document


def test_login_through_the_dashboard_form_lands_on_the_overview(page, operator):
    page.goto("/")

    expect(page).to_have_url(re.compile(r"/login/\?next=/$"))
    page.fill("#id_username", "alice")
    page.fill("#id_password", "alice-pw")
    page.click("input[type=submit]")

    expect(page).to_have_url(re.compile(r"/$"))
    expect(page.locator("h1")).to_have_text("Overview")
    expect(page.locator("#overview-live .as-of")).to_contain_text("UTC")
    expect(page.locator(".topbar__user")).to_contain_text("alice")


def test_expiry_countdown_ticks_without_a_reload(page, operator, sign_in):
    fleet = scene.small_fleet()
    sign_in(operator)
    page.goto("/claims/")
    row = page.locator("tr", has=page.get_by_role("link", name=fleet.workflow_id, exact=True))
    countdown = row.locator(".countdown")
    expect(countdown).to_have_text(re.compile(r"^in \d+(\.\d)? s$"))
    first = countdown.inner_text()
    mark_document(page)

    expect(countdown).not_to_have_text(first, timeout=3_000)

    assert still_same_document(page)
    expect(countdown).to_have_attribute("title", re.compile(r"^expires \d{4}-\d\d-\d\d \d\d:"))


def test_outcome_counter_follows_the_database_through_the_poll(page, operator, sign_in):
    scene.small_fleet()
    ClaimCounter.objects.create(engine_id=scene.HOLDER, name="acquired", value=7)
    sign_in(operator)
    page.goto("/")
    set_refresh_interval(page, "2")
    counter = page.locator(".outcome--acquired .outcome__value")
    expect(counter).to_have_text("7")
    mark_document(page)

    ClaimCounter.objects.filter(engine_id=scene.HOLDER, name="acquired").update(value=42)

    expect(counter).to_have_text("42", timeout=6_000)
    assert still_same_document(page)
