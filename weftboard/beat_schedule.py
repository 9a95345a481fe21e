"""Beat's schedule file, readable by its owner only (settings.CELERY_BEAT_SCHEDULER)."""

from __future__ import annotations

import dbm
import shelve
from pathlib import Path
from typing import Any

from celery.beat import PersistentScheduler

from weftboard.private_var import FILE_MODE, close_to_others, make_private_dir


class PrivateScheduler(PersistentScheduler):
    """Celery's own scheduler, its files 0600 whatever the umask of the beat process.

    ``shelve.open`` creates them 0666 less the umask, and the dbm module Python falls back
    to (dbm.dumb) writes its index again at every sync with that same mode; ``dbm.open``
    with a mode keeps every write 0600. A file left open by an older version is closed.
    """

    def _open_schedule(self) -> shelve.Shelf[Any]:
        filename: str = self.schedule_filename  # type: ignore[attr-defined]  # not in the stubs
        make_private_dir(Path(filename).parent)
        # The shelf owns the database: Celery closes it through the shelf.
        database = dbm.open(filename, "c", FILE_MODE)  # noqa: SIM115
        store: shelve.Shelf[Any] = shelve.Shelf(database, writeback=True)  # type: ignore[arg-type]
        for suffix in self.known_suffixes:
            close_to_others(Path(filename + suffix))
        return store
