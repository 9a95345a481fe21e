"""The production environment the README documents passes `manage.py check --deploy`
without a single warning; without its TLS settings the same check does warn."""

from __future__ import annotations

import os
import re
import secrets
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def documented_production_environment() -> dict[str, str]:
    """Every `export` line of the README's Production section."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Production\n", 1)[1].split("\n## ", 1)[0]
    env: dict[str, str] = {}
    for line in section.splitlines():
        if line.startswith("export "):
            for word in shlex.split(line.removeprefix("export "), comments=True):
                name, _, value = word.partition("=")
                env[name] = value
    # The README writes the secret as "..."; check --deploy rightly calls that weak.
    env["WEFTBOARD_SECRET_KEY"] = secrets.token_urlsafe(50)
    return env


def check_deploy(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("WEFTBOARD_", "DATABASE_"))}
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_readme_documents_the_tls_settings() -> None:
    env = documented_production_environment()
    assert env["WEFTBOARD_HTTPS"] == "1"
    assert env["WEFTBOARD_PROXY_SSL_HEADER"] == "X-Forwarded-Proto"
    assert int(env["WEFTBOARD_HSTS_SECONDS"]) > 0
    assert env["WEFTBOARD_TRUSTED_PROXY_COUNT"] == "1"
    assert env["WEFTBOARD_METRICS_TOKEN"]


@pytest.mark.slow
def test_check_deploy_is_silent_with_the_documented_production_environment() -> None:
    result = check_deploy(documented_production_environment())

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout
    assert "WARNINGS" not in result.stdout + result.stderr


@pytest.mark.slow
def test_check_deploy_names_each_missing_tls_setting() -> None:
    env = documented_production_environment()
    for name in list(env):
        if re.match(r"WEFTBOARD_(HTTPS|HSTS_|PROXY_SSL)", name):
            del env[name]

    result = check_deploy(env)

    assert result.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in result.stderr + result.stdout


@pytest.mark.slow
def test_check_deploy_warns_of_a_proxy_without_a_count_and_of_open_metrics() -> None:
    env = documented_production_environment()
    del env["WEFTBOARD_TRUSTED_PROXY_COUNT"]
    del env["WEFTBOARD_METRICS_TOKEN"]

    result = check_deploy(env)

    assert result.returncode != 0
    assert "weftboard.W001" in result.stderr + result.stdout
    assert "weftboard.W002" in result.stderr + result.stdout
