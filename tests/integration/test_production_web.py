"""The web process as the README's production layout starts it: debug off, gunicorn,
static files collected and served by the process itself (htmx and the stylesheet)."""

from __future__ import annotations

import os
import re
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from faults.processes import free_port, manage

from ._fleet import REPO, VENV_BIN, wait_until

pytestmark = pytest.mark.slow


def production_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("WEFTBOARD_", "WEFT_", "CELERY_", "DJANGO_", "DATABASE_URL"))
    }
    env.update(
        WEFTBOARD_SECRET_KEY="a-production-like-secret-key-for-this-test-only-0123456789",
        WEFTBOARD_ALLOWED_HOSTS="127.0.0.1",
        WEFTBOARD_VAR_DIR=str(tmp_path / "var"),
        **extra,
    )
    return env


@contextmanager
def gunicorn(env: dict[str, str], log: Path) -> Iterator[str]:
    port = free_port()
    argv = [str(VENV_BIN / "gunicorn"), "weftboard.wsgi", "--bind", f"127.0.0.1:{port}"]
    with log.open("ab") as out:
        server = subprocess.Popen(
            [*argv, "--workers", "1"], cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    base = f"http://127.0.0.1:{port}"
    try:

        def answers() -> bool:
            assert server.poll() is None, log.read_text()
            try:
                urllib.request.urlopen(f"{base}/login/", timeout=2).close()
            except OSError:
                return False
            return True

        wait_until(answers, timeout_s=30, what="gunicorn to answer")
        yield base
    finally:
        server.terminate()
        server.wait(20)


def get(url: str) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def assets(page: str) -> dict[str, str]:
    """The stylesheet's and htmx's URLs as the page links them."""
    css = re.search(r'<link rel="stylesheet" href="([^"]+\.css)"', page)
    htmx = re.search(r'<script src="([^"]*htmx[^"]*\.js)"', page)
    assert css, page
    assert htmx, page
    return {"css": css.group(1), "htmx": htmx.group(1)}


@pytest.mark.timeout(120)
def test_collected_static_files_are_served_hashed_and_cacheable(tmp_path):
    static_root = tmp_path / "static"
    env = production_env(tmp_path, WEFTBOARD_STATIC_ROOT=str(static_root))
    manage("collectstatic", "--noinput", env=env)

    with gunicorn(env, tmp_path / "gunicorn.log") as base:
        status, _, body = get(f"{base}/login/")
        assert status == 200
        urls = assets(body.decode())
        css_status, css_headers, css = get(base + urls["css"])
        htmx_status, htmx_headers, htmx = get(base + urls["htmx"])

    assert (css_status, htmx_status) == (200, 200)
    assert re.search(r"weftboard\.[0-9a-f]{12}\.css$", urls["css"]), urls
    assert css == (REPO / "static" / "weftboard.css").read_bytes()
    assert htmx == (REPO / "static" / "vendor" / "htmx.min.js").read_bytes()
    assert css_headers["Content-Type"].startswith("text/css")
    assert "javascript" in htmx_headers["Content-Type"]
    # Hashed names change with the content, so browsers may keep them for good.
    assert "immutable" in css_headers["Cache-Control"]


@pytest.mark.timeout(120)
def test_without_collectstatic_the_source_files_are_served(tmp_path):
    """A deployment that skipped collectstatic still has working pages, not bare HTML."""
    with gunicorn(production_env(tmp_path), tmp_path / "gunicorn.log") as base:
        status, _, body = get(f"{base}/login/")
        urls = assets(body.decode())
        statuses = [get(base + url)[0] for url in urls.values()]

    assert status == 200
    assert statuses == [200, 200]
