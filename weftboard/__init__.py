# Imported here so that @shared_task binds to this app in every Django process.
from weftboard.celery import app as celery_app

__all__ = ("celery_app",)
