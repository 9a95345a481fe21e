"""weftboard settings: every value a deployment may change comes from the environment."""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from weftboard.env_settings import (
    BASE_DIR,
    broker_config,
    cache_config,
    database_config,
    env_flag,
    env_int,
    env_list,
    env_milliseconds,
    env_text,
)

# A setting too: commands find the embedded database's folder as settings.VAR_DIR.
from weftboard.env_settings import VAR_DIR as VAR_DIR

DEBUG = env_flag("WEFTBOARD_DEBUG")

SECRET_KEY = os.environ.get("WEFTBOARD_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "WEFTBOARD_SECRET_KEY is not set; set it, or set WEFTBOARD_DEBUG=1 for development"
        )
    SECRET_KEY = "django-insecure-weftboard-dev-only-never-use-in-production"

ALLOWED_HOSTS = env_list("WEFTBOARD_ALLOWED_HOSTS", default="localhost,127.0.0.1")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_prometheus",
    "django_htmx",
    # Swagger UI's files from ninja's own static folder, not from a CDN.
    "ninja",
    "axes",
    "template_partials",
    "claims.apps.ClaimsConfig",
]

# Prometheus middleware brackets everything else so request timings include it.
MIDDLEWARE = [
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Static files from the web process itself (no CDN, no separate server), before sessions.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    # Under /api/, an unknown path, a wrong method or an unexpected error answers JSON.
    "weftboard.api_errors.ApiJsonErrorsMiddleware",
    "weftboard.nul_guard.NulGuardMiddleware",
    # Before any view reads: each statement of a GET or HEAD stops after the read limit.
    "weftboard.read_time_limit.ReadTimeLimitMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "weftboard.readonly.ReadOnlyAdminMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Reads per user (pages; the API counts its own): after sign-in and htmx, which it reads.
    "weftboard.read_limit.ReadRateMiddleware",
    # Turns a locked-out sign-in into the lockout page; django-axes wants it last.
    "axes.middleware.AxesMiddleware",
    "django_prometheus.middleware.PrometheusAfterMiddleware",
]

ROOT_URLCONF = "weftboard.urls"
WSGI_APPLICATION = "weftboard.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "claims.context_processors.engine_floor",
            ],
        },
    },
]


DATABASES = {"default": database_config()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# django-axes first: it refuses a locked-out user and address before any password is checked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Production runs `collectstatic` into WEFTBOARD_STATIC_ROOT: compressed files under hashed
# names that browsers may cache for good. Without it (development, tests) WhiteNoise serves
# the source folders as they are.
_static_root = env_text("WEFTBOARD_STATIC_ROOT")
STATIC_ROOT = Path(_static_root).resolve() if _static_root else None
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if _static_root
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = not _static_root
WHITENOISE_AUTOREFRESH = DEBUG

# Under ./scripts/run every process writes to one terminal: each line names its process.
PROCESS_NAME = env_text("WEFTBOARD_PROCESS_NAME")
_LOG_PREFIX = f"{PROCESS_NAME} " if PROCESS_NAME else ""
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": f"%(asctime)s {_LOG_PREFIX}%(levelname)s %(name)s %(message)s"},
        "requests": {"format": f"%(asctime)s {_LOG_PREFIX}%(message)s"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain"},
        "requests": {"class": "logging.StreamHandler", "formatter": "requests"},
    },
    # Celery's per-tick INFO lines (received, succeeded, beat's "Sending due task") for
    # the routine tasks beat sends every renew interval; their failures still log.
    "filters": {"quiet_routine_tasks": {"()": "weftboard.logs.QuietRoutineTasks"}},
    "loggers": {
        "celery.worker.strategy": {"filters": ["quiet_routine_tasks"]},
        "celery.app.trace": {"filters": ["quiet_routine_tasks"]},
        "celery.beat": {"filters": ["quiet_routine_tasks"]},
        "weftboard.claims": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "weftboard.broker": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "weftboard.api": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "weftboard.limits": {"handlers": ["console"], "level": "INFO", "propagate": False},
        # Reads and searches stopped by their time limit.
        "weftboard.reads": {"handlers": ["console"], "level": "INFO", "propagate": False},
        # Failed sign-ins and lockouts, with the user name and the address.
        "axes": {"handlers": ["console"], "level": "WARNING", "propagate": False},
        # Django sends server errors only to e-mail when DEBUG is off; an operator needs the
        # traceback in the process's own log.
        "django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False},
        "django.server": {"handlers": ["requests"], "level": "INFO", "propagate": False},
    },
}
CELERY_WORKER_LOG_FORMAT = f"[%(asctime)s: {_LOG_PREFIX}%(levelname)s/%(processName)s] %(message)s"
CELERY_WORKER_TASK_LOG_FORMAT = (
    f"[%(asctime)s: {_LOG_PREFIX}%(levelname)s/%(processName)s] "
    "%(task_name)s[%(task_id)s]: %(message)s"
)

# Durations like "30s" or "9999ms"; claims.conf validates them at startup.
# Modules whose @workflow functions an engine registers at boot.
WEFTBOARD_WORKFLOW_MODULES = env_list(
    "WEFTBOARD_WORKFLOW_MODULES", default="claims.runtime.demo_workflows"
)

# A global switch that refuses every operator write; any text is shown as the reason.
WEFTBOARD_READ_ONLY = env_text("WEFTBOARD_READ_ONLY")

# Requests per user in any window of that length, e.g. "60/min" (s, min, h or d), counted
# in the shared cache (claims.http.user_limits): writes through the JSON API, and reads of
# pages, their live fragments and the API together. Pages poll every 2 s per fragment,
# so the read rate leaves room for several tabs at the fastest pace.
WEFTBOARD_API_WRITE_RATE = env_text("WEFTBOARD_API_WRITE_RATE", "60/min")
WEFTBOARD_READ_RATE = env_text("WEFTBOARD_READ_RATE", "600/min")

WEFTBOARD_METRICS_TOKEN = env_text("WEFTBOARD_METRICS_TOKEN")

# Milliseconds each statement of a page or API read (GET, HEAD) may run; 0: no limit.
WEFTBOARD_READ_TIMEOUT_MS = env_milliseconds("WEFTBOARD_READ_TIMEOUT_MS", 5_000)
# Milliseconds all the statements of one claims search may run together; 0: no limit
# of its own (the read limit still holds).
WEFTBOARD_SEARCH_TIMEOUT_MS = env_milliseconds("WEFTBOARD_SEARCH_TIMEOUT_MS", 250)
# The same for one listing under a query (claims.query).
WEFTBOARD_QUERY_TIMEOUT_MS = env_milliseconds("WEFTBOARD_QUERY_TIMEOUT_MS", 1_000)
# The most workflows one bulk job may act on; a query selecting more is refused.
WEFTBOARD_BULK_MAX_ITEMS = env_int("WEFTBOARD_BULK_MAX_ITEMS", 1_000_000)

# Fewer active, non-silent engines than this is a red alert on every page and on /metrics.
WEFTBOARD_MIN_ENGINES = env_int("WEFTBOARD_MIN_ENGINES", 1)
# Stopped and dead engines stay on the engines page this many days, then beat prunes them.
WEFTBOARD_ENGINE_HISTORY_DAYS = env_int("WEFTBOARD_ENGINE_HISTORY_DAYS", 7)

WEFT_CLAIM_TTL = os.environ.get("WEFT_CLAIM_TTL", "30s")
WEFT_CLAIM_RENEW_INTERVAL = os.environ.get("WEFT_CLAIM_RENEW_INTERVAL", "5s")
# "workflow-lease" (weft's: every claim renewed on its own) or "engine-lease" (one session
# lease per engine, renewed in one statement whatever it holds). A fleet keeps the mode its
# first engine established; docs/design.md §12 says how to switch one offline.
WEFT_OWNERSHIP_MODE = os.environ.get("WEFT_OWNERSHIP_MODE", "workflow-lease")


CELERY_BROKER_URL = env_text("CELERY_BROKER_URL") or "spool://"
CELERY_BROKER_TRANSPORT, CELERY_BROKER_TRANSPORT_OPTIONS = broker_config(CELERY_BROKER_URL)


CACHES = {"default": cache_config(CELERY_BROKER_URL)}
# Celery 5 warns unless this is explicit; retrying lets a worker outlive a broker restart.
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_TIMEZONE = "UTC"
# Celery's file-backed schedule, its files 0600 whatever the umask.
CELERY_BEAT_SCHEDULER = "weftboard.beat_schedule:PrivateScheduler"
# Demo only: new workflows per minute started by beat (the run script sets it).
WEFTBOARD_DEMO_RATE = int(os.environ.get("WEFTBOARD_DEMO_RATE", "0") or 0)


# -- behind a TLS proxy, and the browser's own defences ------------------------------------
# Off by default so `./scripts/run` works on plain http://127.0.0.1; the README's production
# environment turns them on, and `manage.py check --deploy` is then silent.
WEFTBOARD_HTTPS = env_flag("WEFTBOARD_HTTPS")
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = WEFTBOARD_HTTPS
SECURE_SSL_REDIRECT = WEFTBOARD_HTTPS
# Prometheus and load balancers often reach a web process over plain HTTP from inside.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]
# The header a TLS proxy sets to say the browser used https, e.g. X-Forwarded-Proto. Set
# it only behind a proxy that overwrites the header: a client could send it otherwise.
_proxy_ssl_header = env_text("WEFTBOARD_PROXY_SSL_HEADER")
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_" + _proxy_ssl_header.upper().replace("-", "_"), "https") if _proxy_ssl_header else None
)
# Origins of a proxy that serves the site under another name, e.g. https://ops.example.com.
CSRF_TRUSTED_ORIGINS = env_list("WEFTBOARD_CSRF_TRUSTED_ORIGINS", default="")
# HSTS tells browsers never to use plain http for this host again: off until set, since a
# wrong value locks browsers out of http for as long as it says.
SECURE_HSTS_SECONDS = env_int("WEFTBOARD_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_flag("WEFTBOARD_HSTS_INCLUDE_SUBDOMAINS")
SECURE_HSTS_PRELOAD = env_flag("WEFTBOARD_HSTS_PRELOAD")
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# A session ends 12 hours after sign-in, busy or idle (not Django's two weeks): its expiry is
# set at sign-in, and SESSION_SAVE_EVERY_REQUEST off keeps requests from extending it.
SESSION_COOKIE_AGE = 12 * 60 * 60
SESSION_SAVE_EVERY_REQUEST = False
# The database sessions, refusing a cookie no session key could be (weftboard/sessions.py).
SESSION_ENGINE = "weftboard.sessions"

# Scripts only from our own static files: no inline script, no eval (htmx runs with
# allowEval off). Style attributes stay allowed for the bars' computed widths; style
# elements do not.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "style-src-elem": ["'self'"],
        "style-src-attr": ["'unsafe-inline'"],
        # Swagger UI draws its logo from a data: URL; the favicon is an empty one.
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# -- sign-in: django-axes locks a user name at one address after repeated failures ----------
AXES_FAILURE_LIMIT = env_int("WEFTBOARD_LOGIN_FAILURE_LIMIT", 5)
# Hours; a lock lifts by itself after this long, or at once with `axes_reset_username`.
AXES_COOLOFF_TIME = float(env_text("WEFTBOARD_LOGIN_LOCKOUT_HOURS") or 0.25)
# Per user name and address together: guessing from one address is stopped, and nobody can
# lock an operator out from elsewhere by failing in their name.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# The client's address: REMOTE_ADDR, unless WEFTBOARD_TRUSTED_PROXY_COUNT proxies in front
# each append to X-Forwarded-For (a header anyone can send, so never trusted by default).
WEFTBOARD_TRUSTED_PROXY_COUNT = env_int("WEFTBOARD_TRUSTED_PROXY_COUNT", 0)
AXES_CLIENT_IP_CALLABLE = "claims.http.client_address.client_address"
# Every failed sign-in is logged by axes at WARNING with its user name and address (both
# masked) and its user agent, escaped so that a header cannot write a field of its own.
AXES_VERBOSE = True
AXES_CLIENT_STR_CALLABLE = "weftboard.sign_in_log.sign_in_client_str"
