"""Reading the environment for ``weftboard.settings``: typed values, and the database,
broker and cache each built from its URL.

Nothing here imports Django's settings, so the settings module and tests can call these
before (or without) Django being configured.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from weftboard.private_var import create_private_file, make_private_dir

BASE_DIR = Path(__file__).resolve().parent.parent
# The embedded database, broker spool, beat schedule and logs; a soak run or a second
# local fleet points this elsewhere. Everything in it is its owner's alone (private_var).
VAR_DIR = Path(os.environ.get("WEFTBOARD_VAR_DIR", "").strip() or BASE_DIR / "var").resolve()


def env_text(name: str, default: str = "") -> str:
    """The variable's value without surrounding white space, or ``default`` if unset."""
    return os.environ.get(name, default).strip()


def env_int(name: str, default: int) -> int:
    """A whole number; unset or empty means ``default``."""
    return int(env_text(name) or default)


def env_milliseconds(name: str, default: int) -> int:
    """A duration in whole milliseconds, 0 or more; unset or empty means ``default``."""
    text = env_text(name)
    if not text:
        return default
    if not text.isascii() or not text.isdigit():
        raise ImproperlyConfigured(f"{name}={text!r}: give whole milliseconds, e.g. 5000 (0: off)")
    return int(text)


def env_flag(name: str, *, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, *, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def _sqlite_options(config: dict[str, Any], options: dict[str, Any]) -> None:
    # IMMEDIATE takes the write lock at BEGIN, so two writers wait on the busy
    # timeout instead of failing mid-transaction with "database is locked";
    # WAL lets readers proceed while one engine writes.
    options.setdefault("transaction_mode", "IMMEDIATE")
    options.setdefault("timeout", 20)
    options.setdefault("init_command", "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
    # Concurrency tests need real file locking, which an in-memory test database lacks.
    test_name = env_text("WEFTBOARD_TEST_DB_NAME") or "weftboard"
    config["TEST"] = {"NAME": str(VAR_DIR / f"test-{test_name}.sqlite3")}
    config["ENGINE"] = "django_prometheus.db.backends.sqlite3"


def _postgresql_options(config: dict[str, Any], options: dict[str, Any]) -> None:
    # libpq's PGAPPNAME names a process's sessions in pg_stat_activity (one per engine).
    options.setdefault("application_name", env_text("PGAPPNAME") or "weftboard")
    # The store prepares its claim statements server-side; a pooler that cannot keep
    # prepared statements (PgBouncer in transaction mode before 1.21) needs them off.
    if not env_flag("WEFTBOARD_DB_PREPARED_STATEMENTS", default=True):
        options["prepare_threshold"] = None
    # Lets two test runs share one server without dropping each other's database.
    if test_name := env_text("WEFTBOARD_TEST_DB_NAME"):
        config["TEST"] = {"NAME": f"test_{test_name}"}
    config["ENGINE"] = "django_prometheus.db.backends.postgresql"


def database_config() -> dict[str, Any]:
    """The default database from DATABASE_URL, or the embedded SQLite file under var/."""
    url = env_text("DATABASE_URL")
    if not url:
        # SQLite cannot create the directory that holds its file, and creates the file
        # 0644 whatever the umask: made 0600 first, its -wal and -shm copy that mode.
        make_private_dir(VAR_DIR)
        create_private_file(VAR_DIR / "weftboard.sqlite3")
        url = f"sqlite:///{VAR_DIR / 'weftboard.sqlite3'}"
    config: dict[str, Any] = dict(dj_database_url.parse(url, conn_max_age=0))
    options: dict[str, Any] = config.setdefault("OPTIONS", {})
    engine = config["ENGINE"]
    if engine == "django.db.backends.sqlite3":
        _sqlite_options(config, options)
    elif engine == "django.db.backends.postgresql":
        _postgresql_options(config, options)
    return config


def broker_config(url: str) -> tuple[str | None, dict[str, Any]]:
    """The kombu transport class (None: the URL's own) and options for a broker URL."""
    scheme = url.split("://", 1)[0].lower()
    if scheme == "spool":
        # The embedded broker (weftboard.broker.spool): safe for many processes. Polling
        # every 0.1 s puts a tick on an engine within about 0.1 s for about 0.3 % of a core.
        return None, {"spool_folder": str(VAR_DIR / "broker"), "polling_interval": 0.1}
    if scheme == "filesystem":
        raise ImproperlyConfigured(
            "CELERY_BROKER_URL=filesystem:// is kombu's filesystem transport, which hands "
            "consumers half-written messages when several processes share it; leave "
            "CELERY_BROKER_URL unset for the embedded spool:// broker, or use Redis"
        )
    if scheme in {"redis", "rediss"}:
        # The same transport, but a message that does not decode cannot stop a worker.
        return "weftboard.broker.guarded_redis:Transport", {}
    return None, {}


def cache_config(broker_url: str) -> dict[str, Any]:
    """The cache every web process shares (the read and write limits count in it): Redis at
    WEFTBOARD_CACHE_URL, else the broker's Redis; the embedded default runs one web process,
    whose memory is shared enough."""
    url = env_text("WEFTBOARD_CACHE_URL")
    if not url and broker_url.split("://", 1)[0] in {"redis", "rediss"}:
        url = broker_url
    if url:
        return {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": url,
            "KEY_PREFIX": "weftboard",
            # Every page read asks the cache (the read limit): a Redis that stops answering
            # must cost a request 2 s at most, after which it goes through uncounted.
            "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2},
        }
    return {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
