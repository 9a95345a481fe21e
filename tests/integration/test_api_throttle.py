"""The API write limit holds across web processes: two servers share one count in Redis."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import require_service
from tests.workers import spare_redis_database

from ._fleet import REPO, redis_flush, redis_reachable
from .test_production_web import gunicorn, production_env

pytestmark = pytest.mark.slow

CACHE_URL = f"redis://127.0.0.1:6379/{spare_redis_database(alone=14)}"
LIMIT = 10
REQUESTS = 60

MINT = """
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from claims.models import ApiToken
from claims.services.tokens import api_token_mint
user = get_user_model().objects.create_user("throttled")
user.user_permissions.set(Permission.objects.filter(codename="cancel_workflow"))
print(api_token_mint(ApiToken(name="t", user=user, scope="write")))
"""


def write(base: str, secret: str) -> int:
    request = urllib.request.Request(
        f"{base}/api/v1/workflows/missing/cancel",
        data=json.dumps({"reason": "throttle test"}).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


@pytest.mark.timeout(180)
def test_two_web_processes_let_through_no_more_writes_than_the_limit(tmp_path: Path) -> None:
    reachable, reason = redis_reachable(CACHE_URL)
    require_service("Redis", reachable, reason)
    redis_flush(CACHE_URL)
    env = production_env(
        tmp_path,
        DATABASE_URL=f"sqlite:///{tmp_path / 'web.sqlite3'}",
        WEFTBOARD_CACHE_URL=CACHE_URL,
        WEFTBOARD_API_WRITE_RATE=f"{LIMIT}/min",
    )
    manage = [sys.executable, "manage.py"]
    subprocess.run(
        [*manage, "migrate", "--noinput"], cwd=REPO, env=env, check=True, capture_output=True
    )
    minted = subprocess.run(
        [*manage, "shell", "-c", MINT],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    secret = minted.stdout.strip().splitlines()[-1]

    with gunicorn(env, tmp_path / "one.log") as one, gunicorn(env, tmp_path / "two.log") as two:
        bases = [one, two] * (REQUESTS // 2)
        with ThreadPoolExecutor(max_workers=20) as pool:
            statuses = list(pool.map(lambda base: write(base, secret), bases))

    let_through = [status for status in statuses if status != 429]
    assert len(let_through) == LIMIT, statuses
    assert set(let_through) == {404}, statuses  # the unknown workflow, once let through
