"""The README's main command, as a new user runs it: pages, login, metrics, a killed
engine started again, and Ctrl-C.

It runs from this repository on embedded defaults of its own: WEFTBOARD_VAR_DIR points
at a fresh folder, which holds the SQLite file, the spool broker and the admin password.
"""

from __future__ import annotations

import http.cookiejar
import os
import re
import signal
import sqlite3
import subprocess
import time
import urllib.parse
import urllib.request
from contextlib import closing, suppress
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from claims.protocol.constants import OUTCOMES
from faults.processes import free_port

from ._fleet import REPO, wait_until

START_TIMEOUT_S = 120  # migrate a new database, seed the demo, start five processes
# The engines register as they boot, before their first pass; a tick follows within one
# renew interval (5 s by default). Booting three workers, a web server and beat at once
# took 4-5 s after the URL line on a 2-core box; allow 25 s for a loaded one.
ENGINES_ACTIVE_WITHIN_S = 5 + 25
EXIT_WITHIN_S = 30
ENGINE_COUNT = 3  # supervisord.conf


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses.
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: set[int] = set()
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def metric_families(text: str) -> dict[str, object]:
    return {family.name: family for family in text_string_to_metric_families(text)}


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_main_command_serves_pages_and_metrics(tmp_path: Path) -> None:
    """`./scripts/run` prints a URL and a login that work, /metrics shows the three engines,
    and Ctrl-C stops every process it started, each engine releasing its claims."""
    port = free_port()
    var = tmp_path / "var"
    database = var / "weftboard.sqlite3"
    env = run_env(port, var)
    log_path = tmp_path / "run.log"
    run = start_main_command(env, log_path)
    children: set[int] = set()
    try:
        children = check_running_app(run, log_path, port, database)
        children |= check_killed_engine_is_replaced(run, database)
    except BaseException:
        print(log_path.read_text(errors="replace")[-8000:])
        raise
    finally:
        children |= descendants(run.pid)
        stopped = stop_app(run)
    left = {pid for pid in children if alive(pid)}
    assert stopped, f"./scripts/run did not exit within {EXIT_WITHIN_S}s of SIGINT"
    assert left == set(), f"processes left running after Ctrl-C: {sorted(left)}"
    assert run.returncode is not None
    killed = [
        line
        for line in log_path.read_text(errors="replace").splitlines()
        if "SIGINT received" in line or "SIGKILL" in line or "claims are released" in line
    ]
    check_engines_released(database, "\n".join(killed))


def start_main_command(env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    """``./scripts/run`` in a session of its own, its output appended to ``log_path``
    (appending: supervisord and its children each open the file of their own)."""
    with log_path.open("ab") as log:
        return subprocess.Popen(
            ["./scripts/run"],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def run_env(port: int, var: Path, **extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("WEFTBOARD_", "WEFT_", "CELERY_", "DJANGO_", "DATABASE_URL"))
    }
    env.update(WEFTBOARD_PORT=str(port), WEFTBOARD_VAR_DIR=str(var), PYTHONUNBUFFERED="1", **extra)
    return env


# supervisord.conf: a process that dies within a minute of its start is retried 5 times.
START_RETRIES = 5


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_an_engine_that_keeps_dying_is_given_up_and_the_rest_stays_up(tmp_path: Path) -> None:
    """A crash loop shows in the log and stops after a few tries with a growing pause,
    instead of spinning; the web server and beat go on."""
    port = free_port()
    # Engines refuse to start on a workflow module they cannot import; nothing else reads it.
    env = run_env(port, tmp_path / "var", WEFTBOARD_WORKFLOW_MODULES="no_such_module")
    log_path = tmp_path / "run.log"
    run = start_main_command(env, log_path)
    try:

        def given_up() -> bool:
            assert run.poll() is None, f"./scripts/run exited with {run.returncode}"
            text = log_path.read_text(errors="replace")
            return all(f"gave up: engine{n} entered FATAL state" in text for n in (1, 2, 3))

        started = time.monotonic()
        wait_until(given_up, timeout_s=150, what="supervisord to give up on the engines")
        print(f"engines given up {time.monotonic() - started:.0f}s after the start")
        text = log_path.read_text(errors="replace")
        for n in (1, 2, 3):
            assert text.count(f"spawned: 'engine{n}'") == 1 + START_RETRIES
        assert "cannot import a workflow module" in text
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=10) as response:
            assert response.status == 200
        assert "exited: web" not in text
        assert "exited: beat" not in text
    except BaseException:
        print(log_path.read_text(errors="replace")[-8000:])
        raise
    finally:
        assert stop_app(run), "./scripts/run did not stop on Ctrl-C"


def stop_app(run: subprocess.Popen[bytes]) -> bool:
    """Ctrl-C: SIGINT to the run script's process group; True if everything it started
    exited in time (else kill what is left, so nothing outlives the test)."""
    if run.poll() is not None:
        return True
    children = descendants(run.pid)
    os.killpg(run.pid, signal.SIGINT)
    deadline = time.monotonic() + EXIT_WITHIN_S
    while time.monotonic() < deadline:
        children |= descendants(run.pid) if run.poll() is None else set()
        if run.poll() is not None and not any(alive(pid) for pid in children):
            run.wait()
            return True
        time.sleep(0.2)
    for pid in [run.pid, *children]:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    run.wait()
    return False


def check_running_app(
    run: subprocess.Popen[bytes], log_path: Path, port: int, database: Path
) -> set[int]:
    """Log in, see the overview and /metrics; returns the processes the app started."""
    base = f"http://127.0.0.1:{port}"

    def printed() -> re.Match[str] | None:
        assert run.poll() is None, f"./scripts/run exited with {run.returncode}"
        text = log_path.read_text(errors="replace")
        if f"weftboard: {base}/" not in text:
            return None
        return re.search(r"Login: (\S+) / (\S+)", text)

    login = wait_until(printed, timeout_s=START_TIMEOUT_S, what="the URL and login lines")
    printed_at = time.monotonic()
    username, password = login.group(1), login.group(2)
    opener = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
    )

    def login_page() -> str | None:
        try:
            with opener.open(f"{base}/admin/login/?next=/", timeout=5) as response:
                return str(response.read().decode())
        except OSError:
            return None  # not listening yet

    page = wait_until(login_page, timeout_s=60, what="the login page", interval_s=0.5)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token, page
    form = urllib.parse.urlencode(
        {
            "csrfmiddlewaretoken": token.group(1),
            "username": username,
            "password": password,
            "next": "/",
        }
    ).encode()
    with opener.open(f"{base}/admin/login/?next=/", data=form, timeout=10) as response:
        assert response.status == 200
        assert urllib.parse.urlsplit(response.url).path == "/", "the login did not go through"
    with opener.open(f"{base}/", timeout=10) as response:
        overview = response.read().decode()
    assert response.status == 200
    assert "Workflows by status" in overview

    def engines_active() -> dict[str, object] | None:
        with urllib.request.urlopen(f"{base}/metrics", timeout=10) as response:
            families = metric_families(response.read().decode())
        active = [
            sample.value
            for sample in families["weftboard_engines"].samples  # type: ignore[attr-defined]
            if sample.labels == {"status": "active", "scope": "fleet"}
        ]
        # The demo seed adds engines of its own (pid 0): count the ones that run.
        with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
            running, total = db.execute(
                "SELECT SUM(pid <> 0), COUNT(*) FROM claims_engine WHERE status = 'active'"
            ).fetchone()
        if running == ENGINE_COUNT and active == [total]:
            return families
        return None

    families = wait_until(
        engines_active,
        timeout_s=ENGINES_ACTIVE_WITHIN_S,
        what=f"weftboard_engines{{status='active'}} to count the {ENGINE_COUNT} engines",
        interval_s=0.5,
    )
    print(f"engines active {time.monotonic() - printed_at:.1f}s after the URL line")
    attempts = families["weft_workflow_claim_attempts"]
    assert attempts.type == "counter"  # type: ignore[attr-defined]
    assert attempts.documentation == (  # type: ignore[attr-defined]
        "Claim attempts by outcome, summed over every engine that ever ran"
    )
    outcomes = {
        sample.labels["outcome"]
        for sample in attempts.samples  # type: ignore[attr-defined]
        if sample.name == "weft_workflow_claim_attempts_total"
    }
    assert outcomes == set(OUTCOMES)
    return descendants(run.pid)


def engine_pids(database: Path) -> dict[int, str]:
    """pid -> engine id of the engines that run (the demo seed's have pid 0)."""
    with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=20)) as db:
        return {
            int(pid): str(engine_id)
            for pid, engine_id in db.execute(
                "SELECT pid, engine_id FROM claims_engine WHERE pid <> 0 AND status = 'active'"
            )
            if alive(int(pid))
        }


def check_killed_engine_is_replaced(run: subprocess.Popen[bytes], database: Path) -> set[int]:
    """SIGKILL one engine: a new engine (a fresh id) takes its place, and nothing else
    stops. Returns the processes that run afterwards."""
    before = descendants(run.pid)
    victim, victim_id = sorted(engine_pids(database).items())[0]
    os.kill(victim, signal.SIGKILL)

    def replaced() -> dict[int, str] | None:
        assert run.poll() is None, f"./scripts/run exited with {run.returncode}"
        engines = engine_pids(database)
        return engines if len(engines) == ENGINE_COUNT and victim not in engines else None

    engines = wait_until(replaced, timeout_s=60, what="a new engine in place of the killed one")
    assert victim_id not in engines.values()
    stopped = {pid for pid in before - {victim} if not alive(pid)}
    assert stopped == set(), f"processes stopped besides the killed engine: {stopped}"
    return descendants(run.pid)


def check_engines_released(database: Path, shutdown_log: str) -> None:
    """Each engine released its claims on the way out and recorded that it stopped (the
    log lines of the shutdown come with a failure)."""
    with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
        engines = dict(db.execute("SELECT engine_id, status FROM claims_engine WHERE pid <> 0"))
        stopped = [engine_id for engine_id, status in engines.items() if status == "stopped"]
        held = db.execute(
            "SELECT COUNT(*) FROM claims_workflowclaim WHERE holder_engine_id IN "
            f"({', '.join('?' * len(stopped))})",
            stopped,
        ).fetchone()[0]
    # The engine the test killed stays active until beat marks it dead; the rest stopped.
    assert len(engines) == ENGINE_COUNT + 1
    assert sorted(engines.values()) == ["active"] + ["stopped"] * ENGINE_COUNT, (
        f"{engines}\n{shutdown_log}"
    )
    assert held == 0, f"an engine left with claims still held\n{shutdown_log}"
