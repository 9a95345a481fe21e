"""The main command leaves nothing under var/ another local user can read: started with the
usual umask 022 on a new var/, and with umask 000 on a var/ an older version left open
(which it closes, saying so in one line), every file of the running fleet is refused to
``nobody``: the database and its -wal and -shm, the spool, beat's schedule, supervisord's
log, pid file, socket and secret, and the admin's password.
"""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from faults.processes import free_port
from tests.security._other_user import as_other_user_argv, assert_private, reachable_folder

from ._fleet import REPO, wait_until
from .test_main_command import START_TIMEOUT_S, run_env, stop_app

RUNNING_FLEET = [
    "weftboard.sqlite3",
    "weftboard.sqlite3-wal",
    "weftboard.sqlite3-shm",
    "admin-password.txt",
    "broker/queues",
    "broker/tmp",
    "broker/claimed",
    "broker/rejected",
    "broker/exchanges",
    "celerybeat-schedule.dat",
    "celerybeat-schedule.dir",
    "supervisord.log",
    "supervisord.pid",
    "supervisor.sock",
    "supervisor.secret",
]


def leave_open(var: Path, outside: Path) -> None:
    """var/ as an older version under umask 000 could leave it, with a link out of it."""
    (var / "broker" / "queues").mkdir(parents=True)
    for folder in (var, var / "broker", var / "broker" / "queues"):
        folder.chmod(0o777)
    (var / "old.log").write_text("an older run's log\n")
    (var / "old.log").chmod(0o666)
    outside.write_text("someone else's file\n")
    outside.chmod(0o644)
    (var / "link-out").symlink_to(outside)


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.parametrize("umask", [0o022, 0o000], ids=["umask-022-new", "umask-000-left-open"])
def test_another_user_can_read_nothing_of_the_running_main_command(
    tmp_path: Path, umask: int
) -> None:
    other_user = as_other_user_argv()
    with reachable_folder() as folder:
        var = folder / "var"
        outside = folder / "outside.txt"
        if umask == 0o000:
            leave_open(var, outside)
        log_path = tmp_path / "run.log"
        with log_path.open("ab") as log:
            run = subprocess.Popen(
                ["/bin/sh", "-c", f"umask {umask:03o} && exec ./scripts/run"],
                cwd=REPO,
                env=run_env(free_port(), var, WEFTBOARD_DEMO_RATE="0"),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:

            def fleet_files() -> bool:
                assert run.poll() is None, f"./scripts/run exited with {run.returncode}"
                return all((var / name).exists() for name in RUNNING_FLEET)

            wait_until(
                fleet_files,
                timeout_s=START_TIMEOUT_S,
                what="the running fleet's files",
                interval_s=0.5,
            )
            assert_private(other_user, var, RUNNING_FLEET)
        except BaseException:
            print(log_path.read_text(errors="replace")[-8000:])
            raise
        finally:
            assert stop_app(run), "./scripts/run did not stop on Ctrl-C"
        said = [
            line
            for line in log_path.read_text(errors="replace").splitlines()
            if "was open to other users" in line
        ]
        if umask == 0o000:
            assert said == [
                f"weftboard: {var} was open to other users; closed 4 of its files and "
                "folders to everyone but their owner"
            ]
            assert stat.S_IMODE(outside.stat().st_mode) == 0o644
            assert (var / "link-out").is_symlink()
        else:
            assert said == []
