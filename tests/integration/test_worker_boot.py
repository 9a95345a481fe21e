"""An engine worker refuses a pool that would fork one engine identity into several processes."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from ._fleet import REPO, VENV_BIN


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_prefork_pool_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    """`--pool prefork` exits non-zero, saying to use --pool threads or --pool solo."""
    env = dict(os.environ)
    # The refusal comes before any broker or database work; neither is needed (nor touched).
    env.update(
        CELERY_BROKER_URL="memory://",
        DATABASE_URL=f"sqlite:///{tmp_path / 'unused.sqlite3'}",
        WEFTBOARD_SECRET_KEY="x",
        PYTHONUNBUFFERED="1",
    )
    worker = subprocess.Popen(
        [
            str(VENV_BIN / "celery"),
            "-A",
            "weftboard",
            "worker",
            "--pool",
            "prefork",
            "--concurrency",
            "2",
            "--hostname",
            "prefork@%h",
            "--without-gossip",
            "--without-mingle",
            "--loglevel",
            "INFO",
        ],
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = worker.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(worker.pid, signal.SIGKILL)
        stdout, stderr = worker.communicate()
        pytest.fail(f"the prefork worker did not exit:\n{stdout}\n{stderr}")
    output = stdout + stderr

    assert worker.returncode != 0, output
    assert "'prefork' pool is not supported" in output, output
    assert "--pool threads or --pool solo" in output, output
    assert not (tmp_path / "unused.sqlite3").exists(), "it touched the database first"
