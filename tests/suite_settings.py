"""Two settings the suite changes to afford thousands of tests, neither of them a
behaviour any test checks.

- Password hashes: most tests make a user with a password, and the production hasher
  spends a million PBKDF2 rounds (about a quarter of a second here) on each. The suite
  hashes with one round of the same algorithm. The hash keeps its usual form, rounds
  included, so a web server or engine a test starts under the production settings still
  verifies it.
- Static files: WhiteNoise lists and stats every static file when its middleware is built,
  once per process in production but once per test client here (about 30 ms, half of a
  typical page test). The suite's middleware lists them once and hands later instances
  the same table; the files do not change while the suite runs.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.contrib.auth.hashers import PBKDF2PasswordHasher
from whitenoise.middleware import WhiteNoiseMiddleware

PRODUCTION_STATIC_MIDDLEWARE = "whitenoise.middleware.WhiteNoiseMiddleware"


class OneRoundPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    iterations = 1


class FilesListedOnceMiddleware(WhiteNoiseMiddleware):
    _found: ClassVar[dict[str, dict[str, Any]]] = {}

    def add_files_from_finders(self) -> None:
        found = self._found.get(self.static_prefix)
        if found is None:
            before = dict(self.files)
            super().add_files_from_finders()
            found = {url: file for url, file in self.files.items() if url not in before}
            self._found[self.static_prefix] = found
        for url, file in found.items():
            self.files.setdefault(url, file)


def apply(settings: Any) -> None:
    """Before any test runs (Django caches the hashers on first use)."""
    settings.PASSWORD_HASHERS = [f"{__name__}.OneRoundPBKDF2PasswordHasher"]
    settings.MIDDLEWARE = [
        f"{__name__}.FilesListedOnceMiddleware" if entry == PRODUCTION_STATIC_MIDDLEWARE else entry
        for entry in settings.MIDDLEWARE
    ]
    assert f"{__name__}.FilesListedOnceMiddleware" in settings.MIDDLEWARE
