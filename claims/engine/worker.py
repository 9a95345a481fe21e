"""Celery worker hooks that turn a worker process into an engine (docs/design.md §1, §5).

The engine boots in ``worker_init`` (main process, before tasks are consumed),
marks itself disposing as soon as a shutdown is requested, and releases its claims
on a thread of its own from that moment, while Celery winds its consumers down.

An engine that finds beat marked it dead (claims/engine/death.py) does the same from
inside, and the process then exits with DEAD_ENGINE_EXIT_CODE, so its supervisor
(supervisord's autorestart, systemd's Restart=always: both restart on any exit code)
starts a fresh process under a new engine id.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
import time
import uuid
from typing import Any

from celery.signals import worker_init, worker_shutdown, worker_shutting_down

from claims.engine.local import LocalEngine

logger = logging.getLogger("weftboard.claims")

ALLOWED_POOLS = ("threads", "solo")
# EX_TEMPFAIL, 75 ("try again later"): this process is done, a fresh one is wanted.
DEAD_ENGINE_EXIT_CODE = os.EX_TEMPFAIL
# How long worker_shutdown waits for a disposal, and a dead engine's process at most for
# Celery to wind down after its disposal before it ends itself.
DISPOSAL_WAIT_S = 60.0
DEAD_EXIT_GRACE_S = 30.0

_engine: LocalEngine | None = None


def local_engine() -> LocalEngine | None:
    """The engine of this process, or None outside an engine worker."""
    return _engine


def engine_queue(node_name: str) -> str:
    """``engine.<node name>``, spelled so every transport accepts it as a queue and exchange
    name: the filesystem transport refuses '@' (``engine1@host`` -> ``engine.engine1-host``)."""
    return "engine." + re.sub(r"[^A-Za-z0-9._-]", "-", node_name)


def _pool_name(worker: Any) -> str:
    """'threads', 'solo', 'prefork', ... whether Celery gives an alias or a pool class."""
    pool = worker.pool_cls
    name = pool if isinstance(pool, str) else getattr(pool, "__module__", "")
    name = str(name).rsplit(".", 1)[-1].lower()
    return "threads" if name == "thread" else name


def refuse_to_start(message: str) -> None:
    """Stop the worker with a clear message. SystemExit passes through Celery's
    signal dispatch, which would log and swallow an ordinary exception."""
    logger.critical(message)
    print(f"weftboard engine: {message}", file=sys.stderr)
    raise SystemExit(1)


def limit_idle_transactions(ttl_ms: int, *, lock_timeout_ms: int | None = None) -> None:
    """Have PostgreSQL end this engine's session once it idles in a transaction for a TTL.

    An engine stalled inside a transaction (SIGSTOP, a paused VM, swapping) keeps its row
    locks; another engine's CAS on such a row waits for it, so that engine's reclaim pass
    never ends and, single-flight, no later pass starts: nobody reclaims anything, the
    stalled engine's expired claims included, until the stall ends. A healthy engine never
    idles in a transaction (its transactions are a few statements), and after a TTL of
    stall its claims are lapsing anyway; its rolled-back write is what the fence wants.

    ``lock_timeout_ms`` bounds every row-lock wait too, so an attempt blocked behind a
    stalled session fails (and is retried next pass) instead of holding its pass up.
    """
    from django.db import connection
    from django.db.backends.signals import connection_created

    def on_connect(sender: Any, connection: Any, **kwargs: Any) -> None:
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(f"SET idle_in_transaction_session_timeout = {int(ttl_ms)}")
                if lock_timeout_ms is not None:
                    cursor.execute(f"SET lock_timeout = {int(lock_timeout_ms)}")

    connection_created.connect(on_connect, weak=False, dispatch_uid="engine-idle-transactions")
    connection.close()  # reconnect with the setting if this thread is already connected


@worker_init.connect
def start_engine(sender: Any, **kwargs: Any) -> None:
    global _engine
    from claims.conf import claim_timing, ownership_mode
    from claims.fleet_clock import fleet_clock
    from claims.protocol import ensure_ownership_mode
    from claims.protocol.errors import ClaimError
    from claims.store import OrmClaimStore

    pool = _pool_name(sender)
    if pool not in ALLOWED_POOLS:
        refuse_to_start(
            f"the {pool!r} pool is not supported: an engine must be one process, so start the "
            "worker with --pool threads or --pool solo (prefork would fork several processes "
            "that share one engine identity)"
        )
    from django.conf import settings

    from claims.workflow_types import load_workflow_modules

    try:
        types = load_workflow_modules(settings.WEFTBOARD_WORKFLOW_MODULES)
    except ImportError as error:
        # Celery would log and swallow the error, leaving a worker that runs no engine.
        refuse_to_start(
            f"WEFTBOARD_WORKFLOW_MODULES={','.join(settings.WEFTBOARD_WORKFLOW_MODULES)!r}: "
            f"cannot import a workflow module: {error}"
        )
    logger.info("engine runs workflow types: %s", ", ".join(types))

    try:
        timing = claim_timing()
        limit_idle_transactions(timing.ttl_ms, lock_timeout_ms=timing.renew_interval_ms)
        clock = fleet_clock()
        mode = ownership_mode()
        ensure_ownership_mode(OrmClaimStore(), mode, clock)
    except ClaimError as error:
        refuse_to_start(str(error))
    queue = engine_queue(sender.hostname)
    # A direct queue of its own carries this engine's ticks and operator commands.
    sender.app.amqp.queues.select_add(queue)
    engine = LocalEngine(
        engine_id=str(uuid.uuid4()),
        queue=queue,
        timing=timing,
        clock=clock,
        name=str(sender.hostname or ""),
        mode=mode,
        on_dead=stop_worker_dead,
    )
    engine.start()
    _engine = engine
    logger.info("engine %s started on queue %s in the %s mode", engine.engine_id, queue, mode)


def stop_worker_dead(disposal: threading.Thread) -> None:
    """The engine found itself dead and its disposal runs on ``disposal``: stop the worker
    with DEAD_ENGINE_EXIT_CODE. Celery's consumer loop checks ``should_stop`` at every
    turn and raises WorkerShutdown with it (what its own SIGTERM handler does, with 0);
    worker_shutdown then waits for the disposal, and the exit code is this one. Should
    the loop not turn (stuck reconnecting to a broker), the process ends itself once the
    disposal is over and Celery had DEAD_EXIT_GRACE_S more."""
    from celery.worker import state

    # Declared ``None`` in Celery's module; its signal handlers set an exit code too.
    state.should_stop = DEAD_ENGINE_EXIT_CODE  # type: ignore[assignment]
    threading.Thread(
        target=_exit_after, args=(disposal,), name="dead-engine-exit", daemon=True
    ).start()


def _exit_after(disposal: threading.Thread) -> None:
    disposal.join(timeout=DISPOSAL_WAIT_S)
    time.sleep(DEAD_EXIT_GRACE_S)
    logger.critical("the worker did not stop after its engine was found dead: exiting")
    logging.shutdown()
    os._exit(DEAD_ENGINE_EXIT_CODE)


@worker_shutting_down.connect
def begin_disposal(**kwargs: Any) -> None:
    """Runs in the signal handler: flag disposal, and release claims on a thread of its
    own while Celery winds its consumers down, so a supervisor's kill deadline finds the
    claims already released even when it is short."""
    if _engine is not None:
        _engine.dispose_in_background()


@worker_shutdown.connect
def dispose_engine(**kwargs: Any) -> None:
    if _engine is None:
        return
    if _engine.disposal is None:
        _engine.dispose()  # shut down without a signal (e.g. an embedded worker)
    else:
        _engine.disposal.join(timeout=DISPOSAL_WAIT_S)
