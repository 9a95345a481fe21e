"""Nothing under var/ is readable by another local user: the embedded database and its side
files, the spool's folders and messages, beat's schedule and the admin's password file are
0700/0600 whatever the umask of the process that made them, and an existing var/ left open
is closed by ``python -m weftboard.private_var`` (./scripts/run runs it at every start).

The main command itself, with supervisord's files, is in
tests/integration/test_main_command_private_var.py.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from django.db import connection

from ._other_user import as_other_user_argv, assert_private, reachable_folder

ROOT = Path(__file__).resolve().parents[2]

# What the main command's processes do to var/, each piece as its own process would, in
# one process started with the given umask (not through ./scripts/run, which sets its own):
# migrate the embedded database, write the admin's password, publish a task to the spool
# (its queue, exchange and message files), and keep beat's schedule. It holds a database
# connection open (so SQLite's -wal and -shm exist) until its stdin closes.
MAKE_VAR = r"""
import io, os, sys
os.umask(int(sys.argv[1], 8))
import django
django.setup()
from celery.utils.imports import symbol_by_name
from django.core.management import call_command
from django.db import connection
from weftboard.celery import app

call_command("migrate", verbosity=0)
call_command("bootstrap_admin", stdout=io.StringIO())
app.send_task("claims.fan_out_ticks")
scheduler = symbol_by_name(app.conf.beat_scheduler)(
    app=app, schedule_filename=os.path.join(os.environ["WEFTBOARD_VAR_DIR"], "celerybeat-schedule")
)
scheduler.sync()
scheduler.close()
with connection.cursor() as cursor:
    cursor.execute("SELECT COUNT(*) FROM django_session")
print("ready", flush=True)
sys.stdin.read()
"""

SPOOL = ["broker", *(f"broker/{sub}" for sub in ("queues", "tmp", "claimed", "rejected"))]
MADE_BY_PIECES = [
    "weftboard.sqlite3",
    "weftboard.sqlite3-wal",
    "weftboard.sqlite3-shm",
    "admin-password.txt",
    *SPOOL,
    "broker/exchanges",
    "broker/exchanges/celery.json",
    "broker/exchanges/celery.lock",
    "broker/queues/celery",
    "celerybeat-schedule.dat",
    "celerybeat-schedule.dir",
]


def embedded_env(var: Path) -> dict[str, str]:
    """The embedded defaults (SQLite and the spool) in ``var``, whatever this run uses."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("WEFTBOARD_", "WEFT_", "CELERY_", "DATABASE_URL"))
    }
    env.update(
        WEFTBOARD_VAR_DIR=str(var),
        WEFTBOARD_SECRET_KEY="x",
        DJANGO_SETTINGS_MODULE="weftboard.settings",
        PYTHONUNBUFFERED="1",
    )
    return env


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("umask", [0o022, 0o000], ids=["umask-022", "umask-000"])
def test_another_user_can_read_nothing_the_processes_create(umask: int) -> None:
    other_user = as_other_user_argv()
    with reachable_folder() as folder:
        var = folder / "var"
        maker = subprocess.Popen(
            [sys.executable, "-c", MAKE_VAR, f"{umask:o}"],
            cwd=ROOT,
            env=embedded_env(var),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert maker.stdout is not None
            ready = maker.stdout.readline()
            assert ready == "ready\n", maker.communicate(timeout=30)
            assert_private(other_user, var, MADE_BY_PIECES)
        finally:
            maker.communicate(timeout=60)
        assert maker.returncode == 0


def make_open_var(var: Path, outside: Path) -> dict[Path, int]:
    """A var/ as an older version under umask 000 left it: every folder 0777, every file
    0666, and a symlink to a file and one to a folder outside it. The outside entries' modes."""
    (var / "broker" / "queues" / "celery").mkdir(parents=True)
    for folder in (var, var / "broker", var / "broker" / "queues", var / "broker/queues/celery"):
        folder.chmod(0o777)
    with closing(sqlite3.connect(var / "weftboard.sqlite3")) as database:
        database.execute("CREATE TABLE t (x)")
    for path in (var / "weftboard.sqlite3", var / "broker/queues/celery/1.msg", var / "x.log"):
        path.touch()
        path.chmod(0o666)
    (outside / "shared.txt").write_text("not ours to close\n")
    (outside / "shared.txt").chmod(0o644)
    (outside / "shared").mkdir()
    (outside / "shared").chmod(0o755)
    (var / "link-to-file").symlink_to(outside / "shared.txt")
    (var / "broker" / "link-to-folder").symlink_to(outside / "shared")
    return {path: stat.S_IMODE(path.stat().st_mode) for path in outside.iterdir()}


def tighten(var: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "weftboard.private_var", str(var)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


def test_an_open_var_folder_is_closed_in_one_line_without_following_links(
    tmp_path: Path,
) -> None:
    var, outside = tmp_path / "var", tmp_path / "outside"
    outside.mkdir()
    before = make_open_var(var, outside)

    first = tighten(var)

    assert first.stdout.splitlines() == [
        f"weftboard: {var} was open to other users; closed 7 of its files and folders "
        "to everyone but their owner"
    ]
    for path in var.rglob("*"):
        if not path.is_symlink():
            expected = 0o700 if path.is_dir() else 0o600
            assert stat.S_IMODE(path.stat().st_mode) == expected, path
    assert stat.S_IMODE(var.stat().st_mode) == 0o700
    assert {path: stat.S_IMODE(path.stat().st_mode) for path in outside.iterdir()} == before
    # Closed already: nothing to say the next time.
    assert tighten(var).stdout == ""


def test_the_test_database_and_its_side_files_are_private(db: None) -> None:
    """Django deletes and creates the test database again; SQLite makes the file 0644 and
    its side files with that mode: the connection hook closes them."""
    if connection.vendor != "sqlite":
        pytest.skip("the embedded SQLite database only")
    connection.ensure_connection()
    database = Path(connection.settings_dict["NAME"])
    files = [database, *(Path(f"{database}{s}") for s in ("-wal", "-shm", "-journal"))]
    modes = {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in files if p.exists()}
    assert f"{database.name}-wal" in modes
    assert set(modes.values()) == {"0o600"}, modes
