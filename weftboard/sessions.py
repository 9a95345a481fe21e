"""Signed-in sessions, in the database as Django keeps them, but a cookie naming a key no
session could have names no session.

Django looks any session cookie of eight characters or more up in its table. A client can
write a NUL into a cookie (a quoted value with the escape ``\\000``), and PostgreSQL
refuses NUL in text: every page, the API and the admin answered 500 to such a cookie. The
keys Django writes are 32 ASCII letters and digits, so anything else is treated as no
cookie: the visitor is signed out, as with an expired session.
"""

from __future__ import annotations

from django.contrib.sessions.backends import db

# The session table's key column.
SESSION_KEY_MAX_LENGTH = 40


def is_session_key(key: str | None) -> bool:
    """Whether Django could have written ``key``: ASCII letters and digits, 8 to 40 of
    them (Django writes 32; the table's column holds 40)."""
    return (
        key is not None
        and 8 <= len(key) <= SESSION_KEY_MAX_LENGTH
        and key.isascii()
        and key.isalnum()
    )


class SessionStore(db.SessionStore):
    def __init__(self, session_key: str | None = None) -> None:
        super().__init__(session_key if is_session_key(session_key) else None)
