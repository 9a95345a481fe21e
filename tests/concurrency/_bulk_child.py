"""A bulk job runner in a process of its own, for a test to SIGKILL mid-run.

Spawned child processes import this module before Django is set up, so nothing here
imports Django at module level."""

from __future__ import annotations

import os


def run_job(database_url: str, job_id: int, chunk_size: int) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "weftboard.settings"
    os.environ["DATABASE_URL"] = database_url
    os.environ["WEFTBOARD_DEBUG"] = "1"
    import django

    django.setup()
    from claims.bulk import bulk_run

    bulk_run(job_id, chunk_size=chunk_size)
