"""The engine side of weftboard: one Celery worker process is one engine."""
