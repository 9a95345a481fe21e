"""An engine worker refuses to start, with a clear message, on a pool that would fork one
engine identity into several processes or on workflow modules it cannot import."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from faults.processes import engine_argv

from ._fleet import REPO


def worker_output(tmp_path: Path, *, pool: str, **env_extra: str) -> tuple[int, str]:
    """Start a worker that is expected to refuse; its exit code and output."""
    env = dict(os.environ)
    # The refusal comes before any broker or database work; neither is needed (nor touched).
    env.update(
        CELERY_BROKER_URL="memory://",
        DATABASE_URL=f"sqlite:///{tmp_path / 'unused.sqlite3'}",
        WEFTBOARD_SECRET_KEY="x",
        PYTHONUNBUFFERED="1",
        **env_extra,
    )
    worker = subprocess.Popen(
        engine_argv("refused", pool=pool, concurrency=2),
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
        pytest.fail(f"the worker did not exit:\n{stdout}\n{stderr}")
    return worker.returncode, stdout + stderr


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_prefork_pool_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    """`--pool prefork` exits non-zero, saying to use --pool threads or --pool solo."""
    returncode, output = worker_output(tmp_path, pool="prefork")

    assert returncode != 0, output
    assert "'prefork' pool is not supported" in output, output
    assert "--pool threads or --pool solo" in output, output
    assert not (tmp_path / "unused.sqlite3").exists(), "it touched the database first"


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_a_workflow_module_that_does_not_import_stops_the_engine(tmp_path: Path) -> None:
    """Not a worker without an engine: it exits non-zero, naming the setting and module."""
    returncode, output = worker_output(
        tmp_path,
        pool="threads",
        WEFTBOARD_WORKFLOW_MODULES="claims.runtime.demo_workflows,no_such_module",
    )

    assert returncode != 0, output
    assert "WEFTBOARD_WORKFLOW_MODULES=" in output, output
    assert "No module named 'no_such_module'" in output, output
    assert not (tmp_path / "unused.sqlite3").exists(), "it touched the database first"
