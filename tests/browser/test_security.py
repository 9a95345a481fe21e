"""Under the Content-Security-Policy (the page fixture fails on any violation): the API
docs draw Swagger UI from our own files, and a locked-out sign-in says what happened."""

from __future__ import annotations

from django.conf import settings
from playwright.sync_api import expect


def test_the_api_docs_render_swagger_ui_from_local_files(page, operator, sign_in, live_server):
    outside: list[str] = []
    page.on(
        "request",
        lambda request: (
            None
            if request.url.startswith((live_server.url, "data:"))
            else outside.append(request.url)
        ),
    )
    sign_in(operator)

    page.goto("/api/v1/docs")

    expect(page.locator(".swagger-ui .opblock").first).to_be_visible()
    expect(page.get_by_text("/api/v1/workflows/{workflow_id}/claim/takeover")).to_be_visible()
    assert outside == []


def test_repeated_wrong_passwords_lock_the_sign_in_with_a_clear_page(page, operator):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        page.goto("/login/")
        page.fill("#id_username", "alice")
        page.fill("#id_password", "not-her-password")
        page.click("input[type=submit]")

    expect(page.locator("h1")).to_have_text("Sign-in locked")
    page.goto("/login/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "alice-pw")
    page.click("input[type=submit]")
    expect(page.locator("h1")).to_have_text("Sign-in locked")
    expect(page.get_by_role("alert")).to_contain_text("even with the right password")
