"""A bulk job runner in a process of its own, as a worker runs it beside the engines.

Spawned before Django is set up: nothing here imports Django at module level."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote


def database_url(settings_dict: dict[str, Any]) -> str:
    """The URL of the benchmark's own database, for a process to reach it by."""
    if "sqlite" in settings_dict["ENGINE"]:
        return f"sqlite:///{settings_dict['NAME']}"
    user = quote(settings_dict.get("USER") or "", safe="")
    credentials = f"{user}@" if user else ""
    host = settings_dict.get("HOST") or "localhost"
    port = f":{settings_dict['PORT']}" if settings_dict.get("PORT") else ""
    return f"postgres://{credentials}{host}{port}/{quote(settings_dict['NAME'], safe='')}"


def run_job(url: str, job_id: int) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "weftboard.settings"
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("WEFTBOARD_SECRET_KEY", "insecure-benchmark-only-key")
    import django

    django.setup()
    from claims.bulk import bulk_run

    job = bulk_run(job_id)
    if job.status != "done":
        raise SystemExit(f"bulk job #{job_id} ended {job.status}: {job.error}")
