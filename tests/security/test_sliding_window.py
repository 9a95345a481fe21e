"""The per-user limits admit no burst above their rate: no window of the rate's length,
wherever it starts, holds more admitted requests than the limit, on Redis (several web
processes at once) and in this process's memory (the embedded default)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings
from django.test import override_settings

from claims.http.rate_limit import Rate, admit
from tests.conftest import require_service

REPO = Path(__file__).resolve().parents[2]
MEMORY = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}


def redis_url() -> str | None:
    """The Redis this test run was given: the cache's, else the broker's."""
    location = settings.CACHES["default"].get("LOCATION")
    if "RedisCache" in settings.CACHES["default"]["BACKEND"]:
        return str(location)
    broker = str(settings.CELERY_BROKER_URL)
    return broker if broker.startswith(("redis://", "rediss://")) else None


def redis_caches() -> dict[str, dict[str, object]]:
    url = redis_url()
    if url is None:
        require_service("Redis", False, "no Redis given (CELERY_BROKER_URL=redis://…)")
    return {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": url,
            "KEY_PREFIX": "weftboard",
        }
    }


@pytest.fixture(params=["memory", "redis"])
def cache_kind(request: pytest.FixtureRequest) -> Iterator[str]:
    with override_settings(CACHES=MEMORY if request.param == "memory" else redis_caches()):
        yield request.param


@dataclass(frozen=True)
class Attempt:
    sent: float
    answered: float
    admitted: bool


def attempt(key: str, rate: Rate) -> Attempt:
    sent = time.time()
    verdict = admit(key, rate)
    return Attempt(sent, time.time(), verdict.admitted)


def assert_no_window_over_the_limit(attempts: list[Attempt], rate: Rate) -> None:
    """Admissions made one after another: the one ``limit`` places after any admission
    came more than a window after it (measured outward, from the earlier one's send to
    the later one's answer, so the check holds whatever the latency)."""
    admitted = [a for a in attempts if a.admitted]
    for earlier, later in zip(admitted, admitted[rate.limit :], strict=False):
        assert later.answered - earlier.sent > rate.seconds, (earlier, later)


def sleep_until_fraction(fraction: float) -> None:
    """Sleep until the wall clock's second reaches ``fraction`` of itself."""
    time.sleep((fraction - time.time() % 1) % 1)


def test_requests_one_after_another_never_exceed_the_limit_in_any_window(cache_kind):
    rate, key = Rate(5, 1), uuid.uuid4().hex
    attempts = []
    end = time.time() + 2.3
    while time.time() < end:
        attempts.append(attempt(key, rate))
        time.sleep(0.01)

    assert_no_window_over_the_limit(attempts, rate)
    # And it still admits: a full limit in each of the two whole windows.
    assert sum(a.admitted for a in attempts) >= 2 * rate.limit


def test_a_burst_across_a_window_boundary_is_refused(cache_kind):
    """The limit at the end of one second, then again just after it: a fixed window
    admitted both bursts (twice the limit in a fraction of a second)."""
    rate = Rate(5, 1)
    for _ in range(3):  # a machine too busy to finish the first burst in time: again
        key = uuid.uuid4().hex
        sleep_until_fraction(0.6)
        first = [attempt(key, rate) for _ in range(rate.limit)]
        sleep_until_fraction(0.02)
        second = [attempt(key, rate) for _ in range(rate.limit)]
        within_a_window = [a for a in second if a.answered < first[0].sent + rate.seconds]
        if within_a_window:
            break

    assert all(a.admitted for a in first)
    assert within_a_window
    assert not any(a.admitted for a in within_a_window)


def test_a_refusal_says_how_long_until_the_oldest_admission_leaves_the_window(cache_kind):
    rate, key = Rate(2, 60), uuid.uuid4().hex
    assert admit(key, rate).admitted
    time.sleep(1.2)
    assert admit(key, rate).admitted

    refused = admit(key, rate)

    assert not refused.admitted
    assert refused.wait_s is not None
    assert 57.5 < refused.wait_s <= 59.0


def test_concurrent_threads_admit_exactly_the_limit(cache_kind):
    rate, key = Rate(30, 60), uuid.uuid4().hex
    with ThreadPoolExecutor(max_workers=8) as pool:
        verdicts = list(pool.map(lambda _: admit(key, rate).admitted, range(200)))

    assert sum(verdicts) == rate.limit


ADMIT_IN_A_PROCESS = """
import sys, time
import django
django.setup()
from claims.http.rate_limit import Rate, admit
key = sys.argv[1]
# Ready, then wait for the word to go: all four start counting together however long
# each took to boot on a loaded machine.
print("ready", flush=True)
sys.stdin.readline()
admitted = 0
# Slow enough that no one process can take all 30 before the others start on a machine
# busy enough to wake them a second apart: the four must interleave.
for _ in range(60):
    admitted += admit(key, Rate(30, 60)).admitted
    time.sleep(0.05)
print(admitted)
"""


def test_web_processes_at_once_admit_exactly_the_limit_between_them():
    """Four processes, as four web processes would, all counting in one Redis."""
    url = redis_url() or str(redis_caches()["default"]["LOCATION"])
    key = uuid.uuid4().hex
    env = {**os.environ, "WEFTBOARD_CACHE_URL": url, "DJANGO_SETTINGS_MODULE": "weftboard.settings"}
    env.setdefault("WEFTBOARD_SECRET_KEY", "rate-limit-test-only")
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", ADMIT_IN_A_PROCESS, key],
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for process in processes:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready", process.communicate(timeout=30)
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    results = [process.communicate(timeout=120) for process in processes]

    for process, (_, stderr) in zip(processes, results, strict=True):
        assert process.returncode == 0, stderr
    admitted = [int(stdout.strip().splitlines()[-1]) for stdout, _ in results]
    assert sum(admitted) == 30, admitted
    # They did run at once: more than one of them got a share.
    assert sum(1 for count in admitted if count) > 1, admitted
