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

    def _open_schedule(self) -> Any:
        make_private_dir(Path(self.schedule_filename).parent)
        store = shelve.Shelf(dbm.open(self.schedule_filename, "c", FILE_MODE), writeback=True)
        for suffix in self.known_suffixes:
            close_to_others(Path(self.schedule_filename + suffix))
        return store
