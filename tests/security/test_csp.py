"""Every answer carries a Content-Security-Policy that allows scripts from the site alone;
the API docs load Swagger UI from our own static files, never from a CDN."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def directives(header: str) -> dict[str, list[str]]:
    parsed: dict[str, list[str]] = {}
    for part in header.split(";"):
        name, *values = part.split()
        parsed[name] = values
    return parsed


@pytest.fixture
def staff_client(django_user_model) -> Client:
    user = django_user_model.objects.create_superuser("root", password="root-pw-123")
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("path", ["/", "/claims/", "/login/", "/admin/", "/api/v1/docs"])
def test_the_policy_allows_scripts_and_style_sheets_from_the_site_alone(staff_client, path):
    response = staff_client.get(path, follow=True)
    assert response.status_code == 200
    policy = directives(response["Content-Security-Policy"])

    assert policy["script-src"] == ["'self'"]
    assert policy["style-src-elem"] == ["'self'"]
    assert policy["object-src"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert "'unsafe-eval'" not in str(policy)
    # Style attributes (the bars' widths) are the one inline thing allowed.
    assert policy["style-src-attr"] == ["'unsafe-inline'"]


def test_the_login_page_answers_with_the_policy_to_an_anonymous_visitor(client):
    assert "script-src 'self'" in client.get("/login/")["Content-Security-Policy"]


def test_swagger_ui_comes_from_our_static_files(staff_client):
    html = staff_client.get("/api/v1/docs").content.decode()

    assert "/static/ninja/swagger-ui-bundle.js" in html
    assert "/static/ninja/swagger-ui.css" in html
    # "cdn." rather than "cdn": the page's random CSRF token may hold those three letters.
    assert "cdn." not in html.lower()
    assert "https://" not in html
    bundle = staff_client.get("/static/ninja/swagger-ui-bundle.js")
    bundle.close()  # a file response: give the file back
    assert bundle.status_code == 200


def test_no_page_template_has_an_inline_script_or_handler():
    """A guard against regressions the policy would turn into a broken page."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "templates"
    offenders = []
    for template in root.rglob("*.html"):
        text = template.read_text()
        for needle in ("<script>", "onclick=", "onload=", "onchange=", "onsubmit=", "javascript:"):
            if needle in text:
                offenders.append(f"{template.relative_to(root)}: {needle}")
    assert offenders == []
