"""Real Chromium (/usr/bin/chromium) driven by Playwright against pytest-django's live server.

Chromium and axe-core (npm, node_modules/) are services here: missing, the tests fail in CI
(WEFTBOARD_REQUIRE_SERVICES=1) and are skipped elsewhere with the reason. Playwright cannot
download browsers in this environment, so it always launches the system Chromium.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from django.conf import settings as django_settings
from django.test import Client

from tests import factories
from tests.conftest import require_service

from . import scene

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page, ViewportSize

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
AXE_SCRIPT = ROOT / "node_modules" / "axe-core" / "axe.min.js"
SCREENSHOTS = ROOT / "docs" / "screenshots"
VIEWPORT: ViewportSize = {"width": 1280, "height": 900}
TIMEOUT_MS = 10_000
# How long the live server must stay without a running request before the test's data goes.
QUIET_S = 0.3

OPERATOR_PERMISSIONS = (
    "force_claim",
    "cancel_workflow",
    "suspend_workflow",
    "schedule_backfill",
    "view_backfilljob",
)


@pytest.fixture(scope="package")
def chromium() -> Iterator[Browser]:
    """One headless Chromium for the package's tests (each test gets its own context)."""
    require_service(
        "Chromium",
        CHROMIUM.exists(),
        f"{CHROMIUM} is missing (apt-get install -y chromium; .ci/run does it)",
    )
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError as error:
        require_service("Playwright", False, f"the playwright package is missing ({error})")
        raise
    expect.set_options(timeout=TIMEOUT_MS)
    # Playwright's sync API keeps an asyncio loop "running" on this thread while it is
    # started, and Django then refuses ORM calls from the test body as if it were async
    # code. The tests are plain synchronous code, so that guard is lifted for as long as
    # Playwright runs, and restored after.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "1"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
            )
            try:
                yield browser
            finally:
                browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture(scope="package")
def axe_source() -> str:
    require_service(
        "axe-core",
        AXE_SCRIPT.exists(),
        f"{AXE_SCRIPT.relative_to(ROOT)} is missing (run npm ci at the repository root)",
    )
    return AXE_SCRIPT.read_text(encoding="utf-8")


@pytest.fixture(autouse=True)
def _browser_settings(settings: Any) -> None:
    settings.WEFT_CLAIM_TTL = f"{scene.TTL_MS}ms"
    settings.WEFT_CLAIM_RENEW_INTERVAL = f"{scene.RENEW_MS}ms"
    settings.WEFTBOARD_READ_ONLY = ""


@pytest.fixture(autouse=True)
def sent_messages(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """The broker boundary: adopt messages and backfill runs are recorded, never sent."""
    sent: list[tuple[str, Any]] = []
    monkeypatch.setattr(
        "claims.tasks.adopt.apply_async",
        lambda *args, **kwargs: sent.append(("adopt", (args, kwargs))),
    )
    monkeypatch.setattr(
        "claims.services.backfills._enqueue",
        lambda job_id, eta: sent.append(("backfill_run", (job_id, eta))),
    )
    return sent


def _user(django_user_model: Any, name: str, codenames: tuple[str, ...]) -> Any:
    # Staff: the login page is the admin's, which only admits staff accounts.
    return factories.make_user(name, codenames, password=f"{name}-pw", is_staff=True)


@pytest.fixture
def operator(django_user_model: Any) -> Any:
    return _user(django_user_model, "alice", OPERATOR_PERMISSIONS)


@pytest.fixture
def viewer(django_user_model: Any) -> Any:
    return _user(django_user_model, "victor", ())


@pytest.fixture
def context(chromium: Browser, live_server: Any) -> Iterator[BrowserContext]:
    """A fresh browser profile (cookies, storage) on the live server, in UTC."""
    ctx = chromium.new_context(
        base_url=live_server.url, viewport=VIEWPORT, timezone_id="UTC", locale="en-GB"
    )
    ctx.set_default_timeout(TIMEOUT_MS)
    try:
        yield ctx
    finally:
        ctx.close()
        requests_finished(live_server)


def requests_finished(live_server: Any, timeout_s: float = 10.0) -> None:
    """Wait for the live server's request threads. A poll the closed tab sent just before
    still runs on the server, inside its read's transaction (weftboard.read_time_limit);
    the test's database flush would deadlock on its locks, or the request would find the
    database closed to it and log an error."""
    httpd = live_server.thread.httpd
    deadline = time.monotonic() + timeout_s
    quiet_since = time.monotonic()
    # A request the tab sent last may still wait in the socket's backlog: done only once
    # no thread has run for a moment.
    while time.monotonic() < deadline and time.monotonic() - quiet_since < QUIET_S:
        running = [thread for thread in list(httpd._threads) if thread.is_alive()]
        for thread in running:
            thread.join(max(0.0, deadline - time.monotonic()))
        if running:
            quiet_since = time.monotonic()
        time.sleep(0.02)


@pytest.fixture
def page(context: BrowserContext) -> Iterator[Page]:
    """A tab that fails the test on any uncaught JavaScript error or any breach of the
    Content-Security-Policy (an inline script, an eval, a style element, a CDN)."""
    tab = context.new_page()
    errors: list[str] = []
    violations: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))

    def on_console(message: Any) -> None:
        if "Content Security Policy" in message.text:
            violations.append(message.text)

    tab.on("console", on_console)
    yield tab
    if errors:
        pytest.fail(f"uncaught JavaScript error(s) on the page: {errors}")
    if violations:
        pytest.fail(f"Content-Security-Policy violation(s) on the page: {violations}")


@pytest.fixture
def sign_in(context: BrowserContext, live_server: Any) -> Callable[[Any], None]:
    """Give the browser a session for ``user`` (the login form has its own test)."""

    def sign_in(user: Any) -> None:
        client = Client()
        client.force_login(user)
        cookie = client.cookies[django_settings.SESSION_COOKIE_NAME].value
        context.add_cookies(
            [{"name": django_settings.SESSION_COOKIE_NAME, "value": cookie, "url": live_server.url}]
        )

    return sign_in


def mark_document(page: Page) -> None:
    """Tag the loaded document; ``still_same_document`` tells a reload from a swap."""
    page.evaluate("window.__weftboardNoReload = true")


def still_same_document(page: Page) -> bool:
    return bool(page.evaluate("window.__weftboardNoReload === true"))


def set_refresh_interval(page: Page, seconds: str = "2") -> None:
    """The user setting in the top bar; the smallest value is 2 s."""
    page.select_option("#refresh-interval", seconds)
