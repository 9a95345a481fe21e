"""The JSON API under schemathesis, on a live server over a database of its own.

What is checked (``fuzz/schemathesis.toml`` tunes each check): no 5xx; every answer JSON
with the content type and the shape the schema documents for its status; only documented
statuses; input the schema forbids refused (4xx); routes refusing requests without
credentials. The server's log must hold no traceback. The two tokens split the budget:
a read token (every write answers 403) and a write token of a superuser (every write
runs, on the demo fleet and on what the fuzzer itself created).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from faults.processes import REPO, VENV_BIN, Process, free_port, manage, wait_until

CONFIG = Path(__file__).resolve().parent / "schemathesis.toml"
DATABASE = "weftboard_fuzz"
# The routes' answers for this long are what a slow one would be on this fleet; past it,
# schemathesis reports the operation (a page of a few hundred rows never takes this long).
REQUEST_TIMEOUT_S = 30


@dataclass
class FuzzOptions:
    max_time_s: float
    server_url: str
    seed: int
    workdir: Path = field(
        default_factory=lambda: REPO / "var" / "fuzz" / time.strftime("%Y%m%d-%H%M%S")
    )

    def database_url(self) -> str:
        parts = urlsplit(self.server_url)
        return urlunsplit((parts.scheme, parts.netloc, f"/{DATABASE}", "", ""))


def database_recreate(options: FuzzOptions) -> None:
    import psycopg

    with psycopg.connect(options.server_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DATABASE}"')


def server_env(options: FuzzOptions) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=options.database_url(),
        WEFTBOARD_VAR_DIR=str(options.workdir),
        WEFTBOARD_SECRET_KEY=env.get("WEFTBOARD_SECRET_KEY") or "api-fuzz-only-key",
        WEFTBOARD_DEMO_RATE="0",
        # A fuzzer sends thousands of requests a minute; the limits have tests of their own.
        WEFTBOARD_API_WRITE_RATE="1000000/min",
        WEFTBOARD_READ_RATE="1000000/min",
        PYTHONUNBUFFERED="1",
    )
    env.pop("CELERY_BROKER_URL", None)  # the spool in the run's folder: nothing to set up
    return env


# Run with the server's environment: users, tokens and the schema, printed as JSON.
_PREPARE = """
import json
from django.contrib.auth import get_user_model
from claims.models import ApiToken, ApiTokenScope
from claims.services.tokens import api_token_mint
from weftboard.api import api

users = get_user_model().objects
writer = users.create_superuser("fuzz-writer", "", None)
reader = users.create_user("fuzz-reader", "", None)
tokens = {
    "read": api_token_mint(ApiToken(user=reader, name="fuzz read", scope=ApiTokenScope.READ)),
    "write": api_token_mint(ApiToken(user=writer, name="fuzz write", scope=ApiTokenScope.WRITE)),
}
# A queued bulk job (no worker runs it here), so its routes meet a job that exists.
from claims.services.bulk import BulkRequest, bulk_job_create
bulk_job_create(
    BulkRequest("workflows", 'id CONTAINS "-0000"', "suspend", "fuzz: a job to act on"),
    actor="fuzz-writer",
)
print(json.dumps({"tokens": tokens, "schema": api.get_openapi_schema()}))
"""


def prepare(env: dict[str, str], workdir: Path) -> dict[str, str]:
    """Migrate, seed the demo fleet and a bulk job, mint the tokens and write the schema;
    the tokens."""
    manage("migrate", "--noinput", env=env)
    manage("seed_demo", env=env)
    out = json.loads(manage("shell", "-c", _PREPARE, env=env).stdout.strip().splitlines()[-1])
    (workdir / "openapi.json").write_text(json.dumps(out["schema"], indent=1))
    tokens: dict[str, str] = out["tokens"]
    return tokens


def web_start(env: dict[str, str], workdir: Path, port: int) -> Process:
    web = Process(
        "web",
        [
            str(VENV_BIN / "gunicorn"),
            "weftboard.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
            "--threads",
            "4",
            "--timeout",
            "60",
        ],
        env,
        workdir / "web.log",
    )
    wait_until(lambda: _answers(port), timeout_s=60, what="the web server", check=_alive(web))
    return web


def _answers(port: int) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def _alive(process: Process):  # type: ignore[no-untyped-def]
    def check() -> None:
        if not process.alive():
            raise AssertionError(f"the web server exited:\n{process.tail()}")

    return check


def schemathesis(
    options: FuzzOptions, *, token: str, name: str, port: int, max_time_s: float
) -> int:
    """One schemathesis run with ``token``; its exit status (0: nothing found)."""
    argv = [
        str(VENV_BIN / "schemathesis"),
        "--config-file",
        str(CONFIG),
        "run",
        str(options.workdir / "openapi.json"),
        "--url",
        f"http://127.0.0.1:{port}",
        "--header",
        f"Authorization: Bearer {token}",
        "--max-time",
        str(int(max_time_s)),
        "--seed",
        str(options.seed),
        "--request-timeout",
        str(REQUEST_TIMEOUT_S),
        "--report",
        "junit",
        "--report-dir",
        str(options.workdir / f"report-{name}"),
    ]
    print(f"\n=== schemathesis with the {name} token ({int(max_time_s)} s)", flush=True)
    env = {**os.environ, "WEFTBOARD_FUZZ_EXPLAINED": str(_explained_path(options, name))}
    return subprocess.run(argv, cwd=REPO, env=env, check=False).returncode


def _explained_path(options: FuzzOptions, name: str) -> Path:
    return options.workdir / f"explained-{name}.txt"


def explained_counts(options: FuzzOptions, name: str) -> Counter[str]:
    """How often each rule explained a valid request's refusal (fuzz/hooks.py)."""
    path = _explained_path(options, name)
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return Counter(lines)


def tracebacks(log: str) -> list[str]:
    """Each traceback in a server log, from its first line to the line that names the error."""
    found, lines = [], log.splitlines()
    for n, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last)"):
            end = next((m for m in range(n + 1, len(lines)) if lines[m][:1] not in " \t"), n)
            found.append("\n".join(lines[max(0, n - 1) : end + 1]))
    return found


def run(options: FuzzOptions) -> int:
    options.workdir.mkdir(parents=True, exist_ok=True)
    print(f"fuzz: seed {options.seed}, folder {options.workdir}", flush=True)
    try:
        database_recreate(options)
        env = server_env(options)
        tokens = prepare(env, options.workdir)
    except (OSError, subprocess.CalledProcessError) as error:
        print(f"fuzz: could not prepare the server: {error}")
        return 2
    port = free_port()
    web = web_start(env, options.workdir, port)
    try:
        statuses = {
            name: schemathesis(
                options, token=token, name=name, port=port, max_time_s=options.max_time_s / 2
            )
            for name, token in tokens.items()
        }
    finally:
        web.close()
    found = tracebacks(web.log_path.read_text(errors="replace"))
    print("\n=== report")
    for name, status in statuses.items():
        print(f"{name} token: {'passed' if status == 0 else f'FAILED (exit {status})'}")
        for rule, count in explained_counts(options, name).most_common():
            print(f"  {count:6} refusals of a schema-valid request explained by: {rule}")
    print(f"tracebacks in the server's log: {len(found)}")
    for text in found[:5]:
        print(text)
    print(f"seed {options.seed}; schema, reports and the server log in {options.workdir}")
    return 0 if not found and all(status == 0 for status in statuses.values()) else 1
