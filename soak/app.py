"""The main command as a user starts it, and the ways the soak looks at it from outside:
supervisorctl for the processes, a logged-in browser session for the pages, /metrics."""

from __future__ import annotations

import http.cookiejar
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import xmlrpc.client
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from prometheus_client.parser import text_string_to_metric_families

T = TypeVar("T")

REPO = Path(__file__).resolve().parent.parent
# The embedded defaults are the point: nothing of the caller's may point elsewhere.
FOREIGN_ENV = ("WEFTBOARD_", "WEFT_", "CELERY_", "DJANGO_", "DATABASE_URL")
PAGES = ("/", "/claims/", "/engines/", "/reclaim/", "/redrives/", "/backfills/", "/audit/")


@dataclass
class Program:
    name: str  # supervisor's name, e.g. engine:engine2
    state: str
    pid: int | None


@dataclass
class MainCommand:
    var_dir: Path
    port: int
    log_path: Path
    env_extra: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(FOREIGN_ENV)}
        env.update(
            WEFTBOARD_VAR_DIR=str(self.var_dir), WEFTBOARD_PORT=str(self.port), **self.env_extra
        )
        return env

    def start(self) -> None:
        self.var_dir.mkdir(parents=True, exist_ok=True)
        # Appending: supervisord and its children each open the log on their own.
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                ["./scripts/run"],
                cwd=REPO,
                env=self.env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def exited(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def login(self) -> tuple[str, str] | None:
        found = re.search(r"Login: (\S+) / (\S+)", self.log_text())
        return (found.group(1), found.group(2)) if found else None

    def interrupt(self, *, timeout_s: float = 90.0) -> bool:
        """Ctrl-C, as a person at the terminal would: True if it exited in time."""
        if self.process is None or self.process.poll() is not None:
            return True
        os.killpg(self.process.pid, signal.SIGINT)
        try:
            self.process.wait(timeout_s)
            return True
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            return False

    def programs(self) -> list[Program]:
        """What supervisord says of each program (its XML-RPC API, as supervisorctl asks)."""
        from supervisor.xmlrpc import SupervisorTransport

        secret = (self.var_dir / "supervisor.secret").read_text().strip()
        socket_url = f"unix://{self.var_dir / 'supervisor.sock'}"
        proxy = xmlrpc.client.ServerProxy(
            "http://127.0.0.1", transport=SupervisorTransport("weftboard", secret, socket_url)
        )
        try:
            infos: list[dict[str, Any]] = proxy.supervisor.getAllProcessInfo()  # type: ignore[assignment]
        finally:
            proxy("close")()
        return [
            Program(f"{info['group']}:{info['name']}", info["statename"], info["pid"] or None)
            for info in infos
        ]


class Browser:
    """A logged-in session, as an operator's browser holds one."""

    def __init__(self, base_url: str, username: str, password: str) -> None:
        self.base_url = base_url
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        self.username, self.password = username, password

    def log_in(self) -> None:
        page = self.get("/login/?next=/")[1]
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        if not token:
            raise AssertionError("the login page has no CSRF token")
        form = urllib.parse.urlencode(
            {
                "csrfmiddlewaretoken": token.group(1),
                "username": self.username,
                "password": self.password,
                "next": "/",
            }
        ).encode()
        request = urllib.request.Request(
            f"{self.base_url}/login/?next=/", data=form, headers={"Referer": self.base_url}
        )
        with self.opener.open(request, timeout=20) as response:
            if urllib.parse.urlsplit(response.url).path != "/":
                raise AssertionError(f"the login did not go through (landed on {response.url})")

    def get(self, path: str) -> tuple[int, str]:
        try:
            with self.opener.open(f"{self.base_url}{path}", timeout=20) as response:
                return response.status, response.read().decode(errors="replace")
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")


def scrape_counters(base_url: str) -> dict[str, float]:
    """Every counter sample of /metrics, keyed by its name and labels."""
    with urllib.request.urlopen(f"{base_url}/metrics", timeout=20) as response:
        text = response.read().decode()
    samples: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if family.type != "counter":
            continue
        for sample in family.samples:
            if not sample.name.endswith("_total"):
                continue  # _created timestamps are not counts
            # scope="fleet" is on every fleet series (docs/design.md §6): not part of a key.
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()) if k != "scope")
            samples[f"{sample.name}{{{labels}}}"] = sample.value
    return samples


def wait_for(
    probe: Callable[[], T | Literal[False] | None],
    *,
    timeout_s: float,
    what: str,
    interval_s: float = 0.5,
) -> T:
    deadline = time.monotonic() + timeout_s
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(interval_s)
